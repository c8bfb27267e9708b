"""A key in the base URL's query string (`--base-url 'https://host/v1?key=...'`, as some
gateways want it) through the installed `swival`: every place that shows the base URL
(the start-up line, `--json`, stream-json, `--doctor`, the REPL's banner) shows the
marker, never the key."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import run_swival, swival_command
from tests.evidence import record
from tests.rawserver import SSE_REPLY, RawServer

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
