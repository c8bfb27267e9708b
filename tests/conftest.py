"""Shared fixtures. `fake_server` starts loopback model-server stand-ins (tests/fakeserver.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import Listener
from tests.fakeserver import FakeServer


@pytest.fixture(scope="session")
def _shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _private_user_dirs(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch, _shared_cache: Path) -> Path:
    """Every test gets its own user config and state directories, so no test reads the
    real user's global config or records trust and sessions in the real state dir. The
    cache directory (the tokenizer's kept parse) is the run's own, shared by its tests.
    Subprocesses inherit them through the environment."""
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(_shared_cache))
    return home


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


@pytest.fixture
def listener() -> Iterator[Listener]:
    """A loopback TCP server counting the connections it accepts (closed afterwards)."""
    server = Listener()
    yield server
    server.sock.close()
