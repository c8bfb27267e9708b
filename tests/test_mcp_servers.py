"""The MCP client against real MCP servers written with the SDK (tests/mcpserver.py),
over stdio and streamable HTTP on loopback: listing and calling, rendering, approval,
a server that dies mid-call, one that hangs, one that returns 200 KB, one that never
starts, Ctrl-C during a call, and stopping servers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swival.context.engine import ContextEngine, ContextSettings, Storage
from swival.mcp.hub import Hub
from swival.mcp.spec import ServerSpec
from swival.mcp.tools import INLINE_CHARS, Access
from swival.messages import Message, ToolCall, ToolResult
from swival.render.lines import outcome
from swival.tools.approval import Approvals
from swival.tools.base import ToolContext

SERVER = str(Path(__file__).with_name("mcpserver.py"))
pytestmark = pytest.mark.timeout(120)


def stdio(kind: str = "basic", name: str | None = None, **options: Any) -> ServerSpec:
    return ServerSpec(name or kind, command=sys.executable, args=(SERVER, kind), **options)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """A `basic` server over streamable HTTP, for the whole module."""
    process = subprocess.Popen([sys.executable, SERVER, "basic", "--http"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("PORT "), line
    yield f"http://127.0.0.1:{line.split()[1]}/mcp"
    process.kill()
    process.wait()


@pytest.fixture
def hubs() -> Iterator[list[Hub]]:
    made: list[Hub] = []
    yield made
    for hub in made:
        hub.close()


def started(hubs: list[Hub], *specs: ServerSpec) -> Hub:
    hub = Hub(specs)
    hubs.append(hub)
    hub.start()
    hub.settle()
    return hub


@pytest.fixture(scope="module")
def shared() -> Iterator[Hub]:
    """One stdio `basic` server and the HTTP one's twin, reused by the tests that do not
    break them."""
    hub = Hub([stdio("basic")])
    hub.start()
    hub.settle()
    yield hub
    hub.close()


def alive(pid: int, wait: float = 3.0) -> bool:
    """Whether process `pid` still runs after up to `wait` seconds (a zombie is gone)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state in ("Z", "X"):
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


def run(access: Access, tmp_path: Path, tool: str, server: str = "basic",
        **arguments: Any) -> ToolResult:
    return access.call(server, tool, arguments, ctx(tmp_path))


def test_stdio_server_lists_tools_with_their_hints(shared: Hub) -> None:
    conn = shared.connections["basic"]
    assert conn.state == "ready"
    tools = {t.name: t for t in conn.tools}
    assert {"add", "echo", "big", "image", "resource", "table", "fail", "dies", "hang"} <= set(
        tools)
    assert tools["add"].read_only and not tools["echo"].read_only
    assert tools["add"].input_schema["required"] == ["a", "b"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_calls_render_compactly_over_both_transports(transport: str, shared: Hub,
                                                     http_url: str, hubs: list[Hub],
                                                     tmp_path: Path) -> None:
    hub = shared if transport == "stdio" else started(hubs, ServerSpec("basic", url=http_url))
    access = Access(hub, Approvals(), yolo=True)
    assert run(access, tmp_path, "add", a=2, b=3).content == "5"
    assert run(access, tmp_path, "echo", text="hi there").content == "hi there"
    said = run(access, tmp_path, "echo", text="the owner of every note here is named ada")
    assert said.meta["summary"] == "the owner of every note here is named…"  # not "nam"
    assert run(access, tmp_path, "table").content == \
        '{"rows":[{"id":1,"name":"ada"},{"id":2,"name":"bob"}]}'
    assert run(access, tmp_path, "image").content.startswith("[image: image/png, 2.0 KB;")
    assert run(access, tmp_path, "resource").content == \
        "[resource file:///notes/todo.md (text/markdown)]\n- buy milk"
    failed = run(access, tmp_path, "fail", reason="no disk")
    assert failed.is_error and failed.content == "error: fail failed: refused: no disk"
    unknown = access.call("basic", "nope", {}, ctx(tmp_path))
    assert unknown.is_error and "Unknown tool: nope" in unknown.content


def test_headers_reach_an_http_server_and_env_a_stdio_one(http_url: str, hubs: list[Hub],
                                                          tmp_path: Path) -> None:
    hub = started(hubs, ServerSpec("web", url=http_url, headers={"X-Api-Key": "hk-1234567"}),
                  stdio("basic", env={"SERVICE_TOKEN": "tok-7654321"}))
    access = Access(hub, Approvals(), yolo=True)
    assert run(access, tmp_path, "header", "web", name="x-api-key").content == "hk-1234567"
    assert run(access, tmp_path, "env", var="SERVICE_TOKEN").content == "tok-7654321"
    # The user's own secrets are not passed on: only HOME, PATH and a few more, plus env.
    assert run(access, tmp_path, "env", var="XDG_CONFIG_HOME").content == "<unset>"


def test_a_200kb_result_is_cut_and_saved_for_read_file(shared: Hub, tmp_path: Path) -> None:
    access = Access(shared, Approvals(), yolo=True)
    result = run(access, tmp_path, "big", n=200_000)
    assert not result.is_error and len(result.content) < INLINE_CHARS + 400
    assert "[result cut at" in result.content and "of 200000 characters" in result.content
    path = tmp_path / result.meta["path"]
    assert path.is_file() and len(path.read_text()) == 200_000
    assert f'read_file file_path="{result.meta["path"]}" offset=' in result.content
    # the person's line gives the real size and where the whole result is
    said = outcome(result)
    assert said == f"first 19999 of 200000 characters; full text in {result.meta['path']}"
    # Cut further by the context engine, the result's totals stay the whole text's.
    engine = ContextEngine(ContextSettings(window=4096), "You are a coding agent.", [],
                           storage=Storage(tmp_path / ".swival"))
    engine.add_user("fetch the big one")
    call = ToolCall("c1", "mcp__basic__big", {"n": 200_000})
    engine.add_assistant(Message("assistant", tool_calls=(call,)))
    seen = engine.add_tool_result(call, result, read_only=True)
    cut = seen.meta["context_cut"]
    assert (cut["total_chars"], cut["total_lines"]) == (200_000, 2000)
    assert cut["kept_lines"] < 2000 and seen.meta["spill_path"] == result.meta["path"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_that_dies_mid_call_is_a_tool_error_and_marked_down(
        transport: str, hubs: list[Hub], tmp_path: Path) -> None:
    process = None
    if transport == "stdio":
        spec = stdio("basic")
    else:
        process = subprocess.Popen([sys.executable, SERVER, "basic", "--http"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert process.stdout is not None
        spec = ServerSpec("basic", url=f"http://127.0.0.1:{process.stdout.readline().split()[1]}"
                          "/mcp")
    hub = started(hubs, spec)
    access = Access(hub, Approvals(), yolo=True)
    first = run(access, tmp_path, "dies")
    assert first.is_error and "MCP server basic stopped" in first.content
    assert "/mcp restart basic" in first.content
    if transport == "stdio":
        assert "dying on purpose" in first.content  # its last stderr line, told once
    assert hub.connections["basic"].state == "down"
    again = run(access, tmp_path, "add", a=1, b=1)
    assert again.is_error and "is down" in again.content and "dying" not in again.content
    if process is not None:
        process.wait(10)
        return
    hub.restart(["basic"])
    hub.settle()
    assert run(access, tmp_path, "add", a=1, b=1).content == "2"


def test_a_hanging_call_times_out_and_the_server_stays_usable(hubs: list[Hub],
                                                              tmp_path: Path) -> None:
    hub = started(hubs, stdio("basic", call_timeout=1.5))
    access = Access(hub, Approvals(), yolo=True)
    began = time.monotonic()
    result = run(access, tmp_path, "hang")
    assert 1.4 < time.monotonic() - began < 10
    assert result.is_error and "did not answer hang within 1.5 s" in result.content
    assert run(access, tmp_path, "add", a=2, b=2).content == "4"


def test_ctrl_c_interrupts_a_call(shared: Hub, tmp_path: Path) -> None:
    access = Access(shared, Approvals(), yolo=True)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))  # what Ctrl-C sends
    timer.start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run(access, tmp_path, "slow", seconds=60)
    assert time.monotonic() - began < 10
    assert run(access, tmp_path, "add", a=3, b=4).content == "7"


def test_servers_that_do_not_start_say_why(hubs: list[Hub], tmp_path: Path,
                                           http_url: str) -> None:
    began = time.monotonic()
    hub = started(hubs, stdio("crash"), stdio("slowstart", startup_timeout=2),
                  ServerSpec("missing", command=str(tmp_path / "no-such-server")),
                  ServerSpec("nobody", url="http://127.0.0.1:9/mcp", startup_timeout=5),
                  ServerSpec("typo", url=http_url.replace("/mcp", "/mpc"), startup_timeout=5))
    assert time.monotonic() - began < 15  # bounded by the startup timeouts, not 30 s
    states = {name: (conn.state, conn.error) for name, conn in hub.connections.items()}
    assert all(state == "failed" for state, _ in states.values()), states
    assert "fatal: cannot open the database" in hub.connections["crash"].stderr.text()
    assert states["slowstart"][1] == "did not start within 2 s (startup_timeout)"
    assert "No such file or directory" in states["missing"][1]
    assert states["nobody"][1].startswith("cannot connect to its url (")
    # the SDK says only "Not Found" or "Server returned an error response"; the status
    # and where to look are what the person needs
    assert states["typo"][1] == ("its url answered HTTP 404 Not Found; check `url` and "
                                 "`headers` in its table")
    result = run(Access(hub, Approvals(), yolo=True), tmp_path, "add", "crash", a=1, b=2)
    assert result.is_error and "crash stopped" in result.content


def test_calls_need_approval_unless_yolo_or_trusted(shared: Hub, tmp_path: Path) -> None:
    asked: list[tuple[str, tuple[str, ...]]] = []
    replies = ["deny", "once", "basic/add", "server basic"]

    def confirm(action: str, scopes: tuple[str, ...], detail: str) -> str:
        asked.append((action, scopes))
        return replies.pop(0)

    access = Access(shared, Approvals(confirm=confirm))
    denied = run(access, tmp_path, "add", a=1, b=2)
    assert denied.is_error and "declined" in denied.content and denied.meta["refused"]
    assert denied.meta["summary"] == "not called: you declined"
    assert asked[0] == ('Call MCP tool add of server basic with {"a":1,"b":2}',
                        ("basic/add", "server basic"))
    assert run(access, tmp_path, "add", a=1, b=2).content == "3"  # once
    assert run(access, tmp_path, "add", a=1, b=3).content == "4"  # always this tool
    assert run(access, tmp_path, "add", a=1, b=4).content == "5"  # not asked again
    assert run(access, tmp_path, "echo", text="x").content == "x"  # asked: whole server
    assert run(access, tmp_path, "table").content.startswith("{")  # not asked again
    assert len(asked) == 4 and not replies

    nobody = run(Access(shared, Approvals()), tmp_path, "add", a=1, b=2)
    assert nobody.is_error and "--yolo" in nobody.content and "trust = true" in nobody.content


def test_a_trusted_server_runs_unasked(hubs: list[Hub], tmp_path: Path) -> None:
    hub = started(hubs, stdio("basic", trusted=True))
    assert run(Access(hub, Approvals()), tmp_path, "add", a=1, b=2).content == "3"


def test_closing_stops_every_server_process(hubs: list[Hub], tmp_path: Path) -> None:
    hub = started(hubs, stdio("basic"), stdio("basic", name="second"))
    access = Access(hub, Approvals(), yolo=True)
    pids = [int(run(access, tmp_path, "pid", server).content) for server in ("basic", "second")]
    assert all(alive(pid, wait=0) for pid in pids)
    began = time.monotonic()
    hub.close()
    assert time.monotonic() - began < 8
    assert not any(alive(pid) for pid in pids)
