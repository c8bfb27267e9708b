"""Helpers for end-to-end tests that run the installed `swival` command as a subprocess
against a loopback FakeServer, the way a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
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


def unique_sleep() -> str:
    """A `sleep` command line no other process has, so a test can find that process from
    outside even when it runs in the sandbox's own PID namespace (where `$!` is not the
    host's pid)."""
    return f"sleep 1000.{uuid.uuid4().int % 10**9:09d}"


def pids_of(command_line: str) -> list[int]:
    """Running (not zombie) processes whose argv is exactly `command_line`'s words."""
    want = command_line.split(" ")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if [a.decode(errors="replace") for a in argv] == want and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def gone(command_line: str, wait: float = 3.0) -> bool:
    """True once no process runs `command_line` (within `wait` seconds)."""
    deadline = time.monotonic() + wait
    while pids_of(command_line):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def bwrap_problem() -> str | None:
    """Why the bubblewrap sandbox cannot run here (None when it can): tests that need it
    skip with this reason."""
    from swival.tools.sandbox import Sandbox, SandboxConfig

    return Sandbox(SandboxConfig(mode="on")).problem


class Listener:
    """A loopback TCP server that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def accepted_within(self, wait: float = 3.0) -> int:
        """The count, once at least one connection arrived or `wait` seconds passed."""
        deadline = time.monotonic() + wait
        while not self.accepted and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.accepted

    def connect_command(self) -> str:
        """A shell command that connects to this server and prints `connected`."""
        code = f"import socket; socket.create_connection(('127.0.0.1', {self.port}), 5)"
        return f'"{sys.executable}" -c "{code}" && echo connected'
