"""Keys through the installed `swival`. A key in the base URL's query string
(`--base-url 'https://host/?key=...'`, as some gateways want it): every place that shows the
base URL (the start-up line, `--json`, stream-json, `--doctor`, the REPL's banner) shows the
marker, never the key. A subagent that meets a key leaves it in no transcript, output or
request."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import run_swival, swival_command
from tests.evidence import record
from tests.fakeserver import text, tool
from tests.rawserver import SSE_REPLY, RawServer
from tests.test_subagents_e2e import Router

KEY = "sk-in-the-url-0a1b2c3d4e5f"


@pytest.fixture
def server() -> Iterator[RawServer]:
    """A server that, like such gateways, answers whatever path follows the query."""
    raw = RawServer("text/event-stream", SSE_REPLY)
    try:
        yield raw
    finally:
        raw.close()


def url_args(server: RawServer) -> list[str]:
    return ["--provider", "llamacpp", "--base-url", f"{server.url}/?key={KEY}"]


@pytest.mark.parametrize(
    "mode", [["-p", "hi"], ["--json", "-p", "hi"], ["--output-format", "stream-json", "-p", "hi"],
             ["--doctor"]])
@pytest.mark.parametrize("given", ["--api-key", "OPENAI_API_KEY"])
def test_a_key_in_the_base_url_is_never_shown(server: RawServer, tmp_path: Path,
                                              mode: list[str], given: str) -> None:
    args, env = (["--api-key", KEY], {}) if given == "--api-key" else ([], {given: KEY})
    result = run_swival(None, tmp_path, *url_args(server), *args, *mode, env=env)
    shown = result.stdout + result.stderr
    record("secret leak", f"key in the base URL, {given}, {' '.join(mode[:-1] or mode)}",
           "swival", secrets=int(KEY in shown), traceback="Traceback" in result.stderr)
    assert result.returncode == 0, result.stderr
    assert KEY not in shown
    assert "?key=[redacted:" in shown


def test_the_repl_banner_shows_no_key_in_the_base_url(server: RawServer, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    command = swival_command()
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / ".xdg"), "NO_COLOR": "1"}
    child = pexpect.spawn(command[0], [*command[1:], *url_args(server), "--api-key", KEY],
                          cwd=str(tmp_path), env=env, encoding="utf-8", timeout=15,
                          dimensions=(40, 250))
    try:
        child.expect("Type a request")
        banner = child.before or ""
    finally:
        child.close(force=True)
    record("secret leak", "key in the base URL, REPL banner", "swival",
           secrets=int(KEY in banner), traceback="Traceback" in banner)
    assert KEY not in banner and "?key=[redacted:api_key]" in banner


def test_a_subagent_leaves_the_key_in_no_transcript_output_or_request(
        fake_server: Any, tmp_path: Path) -> None:
    """A subagent reads a file holding the key, greps for it and (as a model could) writes
    the key itself in its reply: its transcript, the parent's, stdout, --json, the user's
    state directory and every later request hold the marker, never the key."""
    key = "sk-subagent-9e8d7c6b5a4f"
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={key}\n")
    router = Router(
        parent=[tool("task", description="find the key", prompt="What is in .env?"),
                text("done")],
        child=[tool("read_file", file_path=".env"), tool("grep", pattern="sk-", path="."),
               text(f".env sets OPENAI_API_KEY={key}")])
    server = fake_server(kind="llamacpp").script(*router.items())
    state = tmp_path / ".state"
    result = run_swival(server, tmp_path, "--json", "-p", "look",
                        env={"OPENAI_API_KEY": key, "XDG_STATE_HOME": str(state)})
    places = {"stdout": result.stdout, "stderr": result.stderr,
              "requests": json.dumps(server.requests[1:])}
    for root in (tmp_path / ".swival", state):
        for path in root.rglob("*"):
            if path.is_file() and "undo" not in path.parts:
                places[str(path.relative_to(tmp_path))] = path.read_text(errors="replace")
    found = [name for name, content in places.items() if key in content]
    record("secret leak", "a subagent reads, greps and repeats the key", "swival",
           secrets=len(found), traceback="Traceback" in result.stderr)
    assert result.returncode == 0, result.stderr
    assert router.seen.count("child") == 3, router.seen
    child = [n for n in places if "-task" in n and n.endswith(".jsonl")]
    assert child and "[redacted:OPENAI_API_KEY]" in places[child[0]], "the child's transcript"
    assert not found, found
    assert (tmp_path / ".env").read_text() == f"OPENAI_API_KEY={key}\n"
