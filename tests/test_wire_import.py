"""The model client's set-up leaves out what it never uses (swival/providers/wire.py): a
fresh process warms the client of a local server without trio or httpx's command line,
sends a real request to the loopback fake, and both stay importable afterwards."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer, text

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys

from swival.config import Settings
from swival.messages import Message
from swival.providers.base import ChatRequest, complete
from swival.providers.factory import connect, warm_up

provider = connect(Settings(provider="llamacpp", base_url=sys.argv[1]))
warm_up(provider)
result = {m: m in sys.modules for m in ("httpcore", "trio", "httpx._main", "click")}
result["answer"] = complete(provider, ChatRequest([Message("user", "hi")])).message.content
import trio, httpx._main  # held back only while httpx and httpcore loaded
result["later"] = [trio.__name__, httpx._main.__name__]
print(json.dumps(result))
"""


@pytest.mark.skipif(importlib.util.find_spec("trio") is None, reason="trio is not installed")
def test_the_client_loads_without_trio_or_httpx_cli(fake_server: Callable[..., FakeServer]) -> None:
    server = fake_server(kind="llamacpp")
    server.script(text("Hello there."))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, server.url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {
        "httpcore": True,
        "trio": False,
        "httpx._main": False,
        "click": False,
        "answer": "Hello there.",
        "later": ["trio", "httpx._main"],
    }
