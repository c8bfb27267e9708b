"""Shared fixtures. `fake_server` starts loopback model-server stand-ins (tests/fakeserver.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fakeserver import FakeServer


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeServer]]:
    """Call it like the FakeServer constructor; every server started is stopped afterwards."""
    started: list[FakeServer] = []

    def make(**kwargs: Any) -> FakeServer:
        server = FakeServer(**kwargs).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
