"""Helpers for end-to-end tests that run the installed `swival` command as a subprocess
against a loopback FakeServer, the way a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fakeserver import FakeServer


def swival_command() -> list[str]:
    """The installed console script (falls back to `python -m swival`)."""
    found = shutil.which("swival")
    return [found] if found else [sys.executable, "-m", "swival"]


def run_swival(server: FakeServer | None, root: Path, *args: str, timeout: float = 120,
               env: dict[str, str] | None = None, **popen: Any,
               ) -> subprocess.CompletedProcess[str]:
    base = ["--provider", server.kind, "--base-url", server.url] if server else []
    full_env = {**os.environ, "XDG_CONFIG_HOME": str(root / ".xdg"), "NO_COLOR": "1",
                "COLUMNS": "120", **(env or {})}
    if "input" not in popen:
        popen.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(
        [*swival_command(), *base, *args], cwd=root, text=True, capture_output=True,
        env=full_env, timeout=timeout, **popen,
    )


def request_text(body: dict[str, Any]) -> str:
    """Everything a request carried, as one string, for 'is X in the prompt' checks."""
    return json.dumps(body.get("messages", []), ensure_ascii=False)


def assert_valid_chat(messages: list[dict[str, Any]]) -> None:
    """Every tool call answered exactly once, no orphan results, no user-user pairs."""
    open_ids: list[str] = []
    previous = None
    for message in messages:
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in open_ids, message
            open_ids.remove(message["tool_call_id"])
        else:
            assert not open_ids, f"unanswered calls {open_ids} before a {role} message"
            assert not (role == previous == "user"), "two user messages in a row"
        if role == "assistant":
            open_ids = [c["id"] for c in message.get("tool_calls") or []]
        previous = role
    assert not open_ids


def alive(pid: int, wait: float = 3.0) -> bool:
    """Whether `pid` still runs after up to `wait` seconds. A zombie (killed, not yet reaped
    by an init that may never reap it in a container) counts as gone."""
    deadline = time.monotonic() + wait
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
