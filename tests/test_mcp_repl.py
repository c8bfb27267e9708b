"""MCP servers in the REPL: the approval question (once / always this tool / always this
server / no) and /mcp, over a pipe; and, in a real pseudo-terminal, that a server slow to
start never holds up the prompt and that the first request waits for it."""

from __future__ import annotations

import io
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput

from swival.config import global_config_path, load_settings
from swival.repl import Repl, ReplIO
from swival.session import build_session
from tests.fakeserver import text
from tests.mcpconfig import table
from tests.scripted import ScriptedProvider, call, reply

CTRL_D = "\x04"
pytestmark = pytest.mark.timeout(120)


def write_global(text: str) -> None:
    path = global_config_path(os.environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_repl_asks_once_always_this_tool_or_this_server(tmp_path: Path) -> None:
    write_global(table("basic", "basic"))
    provider = ScriptedProvider([
        call("mcp__basic__add", a=1, b=2),   # y: once
        call("mcp__basic__add", a=2, b=2),   # a: always this tool
        call("mcp__basic__add", a=3, b=2),   # not asked
        call("mcp__basic__echo", text="hi"),  # s: always this server
        call("mcp__basic__table"),           # not asked
        call("mcp__basic__add", a=9, b=9),   # not asked
        reply("done"),
    ], window=16_384)
    session = build_session(load_settings({"max_output_tokens": 1024}, cwd=tmp_path),
                            provider, interactive=True)
    prompts, console = io.StringIO(), io.StringIO()
    try:
        with create_pipe_input() as keys:
            keys.send_text(f"use the tools\ry\ra\rs\r/mcp\r{CTRL_D}")
            io_ = ReplIO(input=keys, output=PlainTextOutput(prompts), console_file=console,
                         width=120, color=False, warm_up=lambda: None, history=False)
            assert Repl(session, io_).run() == 0
    finally:
        session.close()
    shown, asked = console.getvalue(), prompts.getvalue()
    assert shown.count("Call MCP tool add of server basic with") == 2
    assert shown.count("Call MCP tool echo of server basic") == 1
    assert "Call MCP tool table" not in shown
    assert "[y]es once / [a]lways allow basic/add / [s] always allow server basic / [n]o" in asked
    results = [m.content for m in provider.requests[6].messages if m.role == "tool"]
    assert results == ["3", "4", "5", "hi", '{"rows":[{"id":1,"name":"ada"},{"id":2,'
                       '"name":"bob"}]}', "18"]
    assert "basic" in shown and "ready" in shown and "via mcp_call" not in shown
    assert "Tool schemas:" in shown  # /mcp's footer


PROMPT = "›"
SWIVAL = shutil.which("swival")


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
def test_a_slow_server_never_holds_up_the_prompt(fake_server: Any, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    (tmp_path / ".git").mkdir()
    config = tmp_path / ".config"
    (config / "swival").mkdir(parents=True)
    (config / "swival" / "config.toml").write_text(
        table("late", "slowstart", startup_timeout="4", trust="true")
        + table("basic", "basic", trust="true"))
    server = fake_server(kind="llamacpp", window=16_384)
    server.script(text("Hello back."))
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(config),
           "NO_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    began = time.monotonic()
    child = pexpect.spawn(SWIVAL, ["--provider", "llamacpp", "--base-url", server.url],
                          cwd=str(tmp_path), env=env, encoding="utf-8", dimensions=(40, 120),
                          timeout=30)
    try:
        child.expect_exact(PROMPT)
        to_prompt = time.monotonic() - began
        assert to_prompt < 4, f"the prompt took {to_prompt:.1f} s: it waited for a server"
        child.send("hello\r")
        child.expect_exact("Waiting for MCP servers")
        child.expect_exact("MCP server late did not start: did not start within 4 s "
                           "(startup_timeout)")
        child.expect_exact("Hello back.")
        child.expect_exact(PROMPT)
        names = [t["function"]["name"] for t in server.requests[0]["tools"]]
        assert "mcp__basic__add" in names and not any("late" in n for n in names)
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


SDK_MARK = "<<the MCP SDK is being imported>>"
# Loaded by the interpreter at start-up (site imports `sitecustomize` from PYTHONPATH): an
# audit hook that prints SDK_MARK to the terminal the moment anything imports `mcp`.
IMPORT_WATCH = f'''import sys

_told = []


def _watch(event, args):
    if event == "import" and not _told and (args[0] == "mcp" or args[0].startswith("mcp.")):
        _told.append(True)
        sys.__stderr__.write("\\n{SDK_MARK}\\n")
        sys.__stderr__.flush()


sys.addaudithook(_watch)
'''


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
def test_the_prompt_is_drawn_before_the_sdk_is_imported(fake_server: Any,
                                                        tmp_path: Path) -> None:
    """With servers configured, nothing on the way to the prompt imports the MCP SDK
    (about a second on a busy machine): the terminal shows the prompt first and the
    SDK's import after it, when the servers start in the background."""
    pexpect = pytest.importorskip("pexpect")
    (tmp_path / ".git").mkdir()
    config = tmp_path / ".config"
    (config / "swival").mkdir(parents=True)
    (config / "swival" / "config.toml").write_text(table("basic", "basic", trust="true"))
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(IMPORT_WATCH)
    server = fake_server(kind="llamacpp", window=16_384)
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(config),
           "NO_COLOR": "1", "TERM": "xterm-256color", "PYTHONPATH": path}
    child = pexpect.spawn(SWIVAL, ["--provider", "llamacpp", "--base-url", server.url],
                          cwd=str(tmp_path), env=env, encoding="utf-8", dimensions=(40, 120),
                          timeout=30)
    try:
        first = child.expect_exact([PROMPT, SDK_MARK])
        assert first == 0, "the MCP SDK was imported before the prompt was drawn"
        child.expect_exact(SDK_MARK)  # the servers start once the prompt is up
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
