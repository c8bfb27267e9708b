"""MCP servers the way a user meets them: the installed `swival` one-shot against the
fake model server, with real MCP servers (tests/mcpserver.py) configured in the user's
global config or in a project's swival.toml. Covers a call end to end, the one-shot
approval rule (refused unless --yolo or `trust = true` in the global config), the
project-trust rule, --doctor, and that the secrets in `env` and `headers` are written
nowhere: not on stdout or stderr, not in any file, not in what the model was sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import run_swival
from tests.fakeserver import text, tool, tools
from tests.mcpconfig import SERVER, table

ENV_SECRET = "tok-env-8c1d0f55a9"
HEADER_SECRET = "hk-header-77e2b4a1c3"
pytestmark = pytest.mark.timeout(180)


def write_global(root: Path, *tables: str) -> None:
    path = root / ".xdg" / "swival" / "config.toml"  # run_swival's XDG_CONFIG_HOME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(tables), encoding="utf-8")


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def answering(seen: list[str], answer: str) -> Any:
    """A scripted reply that keeps the tool results it was sent in `seen`."""
    def reply(body: dict[str, Any]) -> Any:
        seen.extend(tool_messages(body))
        return text(answer)

    return reply


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_one_shot_calls_a_trusted_servers_tool_and_stops_the_server(
        fake_server: Any, project: Path) -> None:
    pid_file = project / "pids"
    write_global(project, table("basic", "basic", trust="true",
                                env=f"{{ MCP_PID_FILE = {json.dumps(str(pid_file))} }}"))
    seen: list[str] = []
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__basic__add", a=2, b=3), answering(seen, "The sum is 5."))
    result = run_swival(server, project, "-p", "add 2 and 3")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The sum is 5.\n"
    assert seen == ["5"]
    assert "mcp__basic__add" in tool_names(server.requests[0])
    assert "mcp__basic__add" in result.stderr  # the progress line names the tool
    started = pids(pid_file)
    assert len(started) == 1 and not running(started[0]), "the server outlived swival"


def test_a_server_writing_text_that_is_not_mcp_shows_no_traceback(
        fake_server: Any, project: Path) -> None:
    """One server prints a banner on stdout and then works; another answers only with
    text. The SDK logs a traceback for every such line: none may reach the terminal, and
    the server that never starts says what it wrote."""
    write_global(project, table("banner", "banner", trust="true"),
                 # room for the server's own start-up (it imports the SDK) on a busy machine
                 table("junk", "garbage", startup_timeout="8"))
    seen: list[str] = []
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__banner__add", a=2, b=3), answering(seen, "5"))
    result = run_swival(server, project, "-p", "add 2 and 3")
    assert result.returncode == 0, result.stderr
    assert seen == ["5"]
    assert "Traceback" not in result.stderr and "JSONRPC" not in result.stderr
    assert ("MCP server junk did not start: did not start within 8 s (startup_timeout); it "
            'wrote text that is not MCP on its stdout ("Unknown command, type help for help")'
            in result.stderr)


def test_a_type_list_in_a_servers_schema_is_checked_not_a_crash(
        fake_server: Any, project: Path) -> None:
    """`"type": ["string", "null"]` is how many servers say an argument may be null."""
    write_global(project, table("nullable", "nullable", trust="true"))
    seen: list[str] = []
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__nullable__note", text="hi", tag="a"),
        tool("mcp__nullable__note", text="hi", tag=None),
        tool("mcp__nullable__note", text="hi", tag=3), answering(seen, "done"))
    result = run_swival(server, project, "-p", "note hi")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert seen == ["hi [a]", "hi [None]",
                    "error: mcp__nullable__note: argument `tag` must be of type string (text "
                    'in double quotes, e.g. "abc"), got integer 3.']


def test_numbers_and_booleans_sent_as_strings_are_taken_when_unambiguous(
        fake_server: Any, project: Path) -> None:
    """Small models quote numbers and booleans: "2" for an integer is taken as 2, for an
    MCP tool and for Swival's own (read_file's offset, grep's case_insensitive); what is
    truly wrong is refused with the type to send."""
    write_global(project, table("basic", "basic", trust="true"))
    (project / "notes.txt").write_text("one\ntwo\nthree\nTHREE\n", encoding="utf-8")
    seen: list[str] = []
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__basic__add", a="2", b=" 3"),
        tool("read_file", file_path="notes.txt", offset="3", limit="1.0"),
        tool("grep", pattern="three", path="notes.txt", case_insensitive="True"),
        tool("mcp__basic__add", a="two", b=3), answering(seen, "done"))
    result = run_swival(server, project, "-p", "add")
    assert result.returncode == 0, result.stderr
    assert seen[0] == "5"
    assert "three" in seen[1] and "two" not in seen[1] and "THREE" not in seen[1]
    assert "three" in seen[2] and "THREE" in seen[2]
    assert seen[3] == ("error: mcp__basic__add: argument `a` must be of type integer (a whole "
                       'number without quotes, e.g. 10), got string "two".')


@pytest.mark.parametrize("flags", [(), ("--yolo",)])
def test_one_shot_refuses_calls_to_an_untrusted_server_unless_yolo(
        fake_server: Any, project: Path, flags: tuple[str, ...]) -> None:
    log = project / "calls.jsonl"
    write_global(project, table("basic", "basic",
                                env=f"{{ MCP_CALL_LOG = {json.dumps(str(log))} }}"))
    seen: list[str] = []
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__basic__echo", text="hello"), answering(seen, "done"))
    result = run_swival(server, project, *flags, "-p", "echo hello")
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    if flags:
        assert seen == ["hello"] and len(calls) == 1
    else:
        assert len(seen) == 1 and seen[0].startswith("call refused: MCP tools need the user's "
                                                     "approval")
        assert "--yolo" in seen[0] and "trust = true" in seen[0]
        assert calls == [], "a refused call reached the server"


def test_an_untrusted_projects_servers_are_ignored_and_never_started(
        fake_server: Any, project: Path) -> None:
    pid_file = project / "pids"
    (project / "swival.toml").write_text(table(
        "repo", "basic", trust="true", env=f"{{ MCP_PID_FILE = {json.dumps(str(pid_file))} }}"))
    server = fake_server(kind="llamacpp", window=8192).script(text("ok"))
    result = run_swival(server, project, "-p", "hi")
    assert result.returncode == 0, result.stderr
    assert "ignoring mcp_servers" in result.stderr and "--trust" in result.stderr
    assert pids(pid_file) == []
    assert not any(n.startswith("mcp") for n in tool_names(server.requests[0]))


@pytest.fixture
def http_server() -> Iterator[str]:
    process = subprocess.Popen([sys.executable, SERVER, "basic", "--http"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    yield f"http://127.0.0.1:{process.stdout.readline().split()[1]}/mcp"
    process.kill()
    process.wait()


def test_secrets_in_env_and_headers_are_written_nowhere(
        fake_server: Any, project: Path, http_server: str) -> None:
    write_global(project,
                 table("basic", "basic", trust="true",
                       env=f'{{ SERVICE_TOKEN = "{ENV_SECRET}" }}'),
                 f'[mcp_servers.web]\nurl = "{http_server}"\ntrust = true\n'
                 f'headers = {{ X-Api-Key = "{HEADER_SECRET}" }}\n')
    server = fake_server(kind="llamacpp", window=8192).script(
        tools([("mcp__basic__env", {"var": "SERVICE_TOKEN"}),
               ("mcp__web__header", {"name": "x-api-key"}),
               ("mcp__basic__env", {"var": "SERVICE_TOKEN", "repeat": 3000})]),
        text("done"))
    runs = [run_swival(server, project, "-p", "show me the token", "--json"),
            run_swival(server, project, "--doctor")]
    assert runs[0].returncode == 0, runs[0].stderr
    results = tool_messages(server.requests[-1])
    assert len(results) == 3 and results[:2] == [
        "[redacted:mcp_servers.basic.env.SERVICE_TOKEN]",
        "[redacted:mcp_servers.web.headers.X-Api-Key]"], results
    assert "ready: 13 tools" in runs[1].stdout and "web" in runs[1].stdout
    assert list(project.glob(".swival/**/*.txt")), "the long result was spilled to a file"
    written = [r.stdout + r.stderr for r in runs]
    written += [json.dumps(body) for body in server.requests]
    state = Path(os.environ["XDG_STATE_HOME"])
    for root in (project, state):
        written += [p.read_text(errors="replace") for p in root.rglob("*") if p.is_file()
                    and ".xdg" not in p.parts]
    for secret in (ENV_SECRET, HEADER_SECRET):
        assert not any(secret in text for text in written), secret


def test_one_shot_failures_say_what_to_do_without_repl_commands(
        fake_server: Any, project: Path) -> None:
    """A server that does not start, a call that hangs past the server's `timeout`, and a
    server that dies mid-call: each is told in words that fit a one-shot run (no /mcp
    restart, which only the REPL has), the hang names the key to change, and the run goes
    on to its answer."""
    write_global(project, table("basic", "basic", trust="true", timeout="1.5"),
                 table("junk", "garbage", startup_timeout="3"))
    seen: list[str] = []
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__basic__hang"), tool("mcp__basic__dies"), tool("mcp__basic__add", a=1, b=2),
        answering(seen, "Done without it."))
    result = run_swival(server, project, "-p", "go")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Done without it."
    assert "/mcp" not in result.stderr and not any("/mcp" in said for said in seen)
    assert ("MCP server junk did not start" in result.stderr and "Continuing without its "
            "tools; `swival --doctor` checks it; the next run starts it again." in result.stderr)
    assert ("mcp__basic__hang — no answer from basic within 1.5 s, cancelled (its `timeout` "
            "under [mcp_servers.basic] sets the limit)") in result.stderr
    assert seen[0].startswith("error: MCP server basic did not answer hang within 1.5 s")
    assert seen[1].startswith("error: MCP server basic stopped: it exited or closed the "
                              "connection. Its tools cannot be used for the rest of this run")
    assert "dying on purpose" in seen[1]
    assert seen[2] == ("error: MCP server basic is down; its tools cannot be used for the rest "
                       "of this run; continue without them.")


def test_stream_json_records_mcp_calls_and_their_outcome(
        fake_server: Any, project: Path) -> None:
    """Each MCP call is a tool_call and a tool_result record, with the exposed name (so
    the server), the arguments as sent, and whether it worked."""
    write_global(project, table("basic", "basic", trust="true"))
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__basic__add", a="2", b=3), tool("mcp__basic__fail", reason="disk full"),
        text("done"))
    result = run_swival(server, project, "-p", "go", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    calls = [r for r in records if r["type"] in ("tool_call", "tool_result")]
    assert [(r["type"], r["name"]) for r in calls] == [
        ("tool_call", "mcp__basic__add"), ("tool_result", "mcp__basic__add"),
        ("tool_call", "mcp__basic__fail"), ("tool_result", "mcp__basic__fail")]
    assert calls[0]["arguments"] == {"a": "2", "b": 3}
    assert calls[1]["ok"] is True and calls[1]["summary"] == "5"
    assert calls[3]["ok"] is False and "disk full" in calls[3]["summary"]
    assert records[-1]["type"] == "result" and records[-1]["tool_calls"] == 2
