"""MCP servers through the real composition (build_session) and agent, with a scripted
model: the first request waits for the servers and carries their tools; 60 tools at an
8K window go through the schema budget and stay reachable through mcp_list/mcp_call; a
server slow to start is left out after its timeout; /mcp lists and restarts, and the
change of tool list is counted as re-processing; without servers the SDK never loads."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swival.commands import dispatch
from swival.config import global_config_path, load_settings
from swival.context.tokens import TokenCounter
from swival.events import Event, Notice, ToolFinished
from swival.session import Session, build_session
from tests.mcpconfig import table
from tests.scripted import ScriptedProvider, call, reply

pytestmark = pytest.mark.timeout(120)


def write_global(*tables: str) -> None:
    path = global_config_path(os.environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(tables), encoding="utf-8")


@pytest.fixture
def sessions() -> Iterator[list[Session]]:
    made: list[Session] = []
    yield made
    for session in made:
        session.close()


def open_session(root: Path, provider: ScriptedProvider, sessions: list[Session],
                 **cli: Any) -> Session:
    settings = load_settings(cli, cwd=root)
    session = build_session(settings, provider, interactive=False)
    sessions.append(session)
    return session


def turn(session: Session, text: str) -> list[Event]:
    return list(session.agent.run_turn(text))


def tool_names(request: Any) -> list[str]:
    return [schema["function"]["name"] for schema in request.tools]


def test_the_first_request_waits_for_servers_and_carries_their_tools(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("basic", "basic", trust="true"))
    provider = ScriptedProvider([call("mcp__basic__add", a=2, b=3), reply("It is 5.")])
    session = open_session(tmp_path, provider, sessions)
    assert "mcp__basic__add" not in session.agent.tools.names  # not yet: still starting
    events = turn(session, "add 2 and 3")
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices and notices[0] == "Waiting for MCP server basic to start…"
    first = provider.requests[0]
    assert {"mcp__basic__add", "mcp__basic__echo", "read_file"} <= set(tool_names(first))
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert finished[0].result.content == "5" and not finished[0].result.is_error
    assert provider.requests[1].messages[-1].content == "5"
    # The whole tool list was fixed before the first request: both requests carry the same.
    assert provider.requests[0].tools == provider.requests[1].tools


def test_sixty_tools_at_8k_are_held_back_and_reachable_through_mcp_call(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("many", "many", trust="true"),
                 table("basic", "basic", trust="true"))
    provider = ScriptedProvider([
        call("mcp_list", server="many"),
        call("mcp_list", server="many", tool="search_collection_07"),
        call("mcp_call", server="many", tool="search_collection_07", arguments={"limit": 3}),
        call("mcp_call", server="many", tool="search_collection_07",
             arguments={"query": "status:open", "limit": 3}),
        # small models often encode an object argument a second time, as a string
        call("mcp_call", server="many", tool="search_collection_08",
             arguments='{"query": "owner:ada"}'),
        call("mcp_call", server="many", tool="search_collection_09", arguments="query=x"),
        # a held-back tool called by its own name; numbers sent as strings inside arguments
        call("mcp__many__search_collection_10", query="x"),
        call("mcp_call", server="many", tool="search_collection_10",
             arguments={"query": "x", "limit": "2", "verbose": "false"}),
        reply("Found it."),
    ], window=8192)
    session = open_session(tmp_path, provider, sessions)
    events = turn(session, "search collection 7")
    first = provider.requests[0]
    names = tool_names(first)
    assert "mcp_list" in names and "mcp_call" in names
    assert not any(name.startswith("mcp__many__") for name in names)
    assert "mcp__basic__add" in names  # the cheap server keeps its tools, whole
    budget = session.agent.context.budget.input_budget
    assert TokenCounter().schemas(first.tools) <= 0.5 * budget
    warning = next(e.text for e in events if isinstance(e, Notice) and "Held back" in e.text)
    assert "many 60 tools" in warning and "Held back many" in warning
    results = [e.result for e in events if isinstance(e, ToolFinished)]
    assert results[0].content.startswith("60 tools of many")
    assert "search_collection_07: Search collection number 7" in results[0].content
    assert '"query"' in results[1].content and '"required": ["query"]' in results[1].content
    assert results[2].is_error and "missing required argument: query" in results[2].content
    assert "mcp_list server=many tool=search_collection_07" in results[2].content
    assert results[3].content == "tool 7: status:open (limit 3)" and not results[3].is_error
    assert results[4].content == "tool 8: owner:ada (limit 10)" and not results[4].is_error
    assert results[5].is_error and "`arguments` must be of type object" in results[5].content
    assert results[6].is_error and results[6].content == (
        "error: many's tools are not in your tool list; reach this one through mcp_call with "
        'server="many", tool="search_collection_10" and its arguments (mcp_list server=many '
        "tool=search_collection_10 shows them).")
    assert results[7].content == "tool 10: x (limit 2)" and not results[7].is_error
    rows = {row[0]: row for row in dispatch("/mcp", session.agent).rows}
    assert rows["many"][3] == "60" and rows["many"][5] == "via mcp_call"
    assert rows["basic"][5] == "whole"


def test_at_32k_the_sixty_tools_are_sent_shortened_and_still_work(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("many", "many", trust="true"))
    provider = ScriptedProvider([
        call("mcp__many__search_collection_07", query="status:open"), reply("Found it.")],
        window=32_768)
    session = open_session(tmp_path, provider, sessions)
    events = turn(session, "search collection 7")
    schemas = {s["function"]["name"]: s["function"] for s in provider.requests[0].tools}
    tool = schemas["mcp__many__search_collection_07"]
    assert tool["description"] == "Search collection number 7 for records matching a query."
    assert tool["parameters"]["required"] == ["query"]
    assert set(tool["parameters"]["properties"]) == {"query", "limit", "cursor", "verbose"}
    assert "title" not in tool["parameters"] and "default" not in str(tool["parameters"])
    assert TokenCounter().schemas(provider.requests[0].tools) <= \
        0.5 * session.agent.context.budget.input_budget
    assert any("shortened the schemas of many" in e.text for e in events
               if isinstance(e, Notice))
    results = [e.result.content for e in events if isinstance(e, ToolFinished)]
    assert results == ["tool 7: status:open (limit 10)"]


def test_a_server_slow_to_start_is_left_out_after_its_timeout(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("late", "slowstart", startup_timeout="2"))
    provider = ScriptedProvider([reply("Done without it.")])
    began = time.monotonic()
    session = open_session(tmp_path, provider, sessions)
    assert time.monotonic() - began < 2  # building the session never waits for a server
    events = turn(session, "hello")
    assert time.monotonic() - began < 12
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any("MCP server late did not start: did not start within 2 s (startup_timeout)" in n and
               "the next run starts it again" in n for n in notices), notices  # one-shot
    assert not any(name.startswith("mcp__") for name in tool_names(provider.requests[0]))
    provider.add(reply("Again."))
    assert not [e for e in turn(session, "again") if isinstance(e, Notice)]  # told once


def test_a_server_that_crashes_at_start_is_told_in_whole_sentences(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("broken", "crash"))
    provider = ScriptedProvider([reply("Done without it.")])
    session = open_session(tmp_path, provider, sessions)
    notices = [e.text for e in turn(session, "hello") if isinstance(e, Notice)]
    told = next(n for n in notices if n.startswith("MCP server broken did not start"))
    assert "Its last error output: fatal: cannot open the database. Continuing without its " \
           "tools; `swival --doctor` checks it; the next run starts it again." in told
    assert "/mcp" not in told  # a one-shot session: no REPL command to suggest


def test_mcp_restart_with_the_same_tools_reprocesses_nothing(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("basic", "basic", trust="true"))
    provider = ScriptedProvider([call("mcp__basic__dies"), reply("It died.")])
    session = open_session(tmp_path, provider, sessions)
    events = turn(session, "break it")
    dead = [e.result for e in events if isinstance(e, ToolFinished)][0]
    assert dead.is_error and "MCP server basic stopped" in dead.content
    listed = dispatch("/mcp", session.agent)
    assert listed.rows[0][2].startswith("down")
    assert session.agent.context.usage().reprocessed == 0
    restarted = dispatch("/mcp restart basic", session.agent)
    assert restarted.rows[0][2] == "ready"
    # the server came back with the same tools: the prompt does not change, so nothing
    # is re-processed and nothing is said about it
    assert "re-processes the whole prompt" not in restarted.text
    assert session.agent.context.usage().reprocessed == 0
    assert "changes to the tool list (/mcp, /plan): 0." in dispatch(
        "/context", session.agent).footer
    provider.add(call("mcp__basic__add", a=1, b=1), reply("2"))
    events = turn(session, "add")
    assert [e.result.content for e in events if isinstance(e, ToolFinished)] == ["2"]
    unknown = dispatch("/mcp restart nosuch", session.agent)
    assert "No MCP server named nosuch" in unknown.text


def test_project_servers_need_trust_and_never_replace_a_global_one(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("basic", "basic", trust="true"))
    (tmp_path / ".git").mkdir()
    (tmp_path / "swival.toml").write_text(
        table("basic", "crash") + table("extra", "basic", trust="true"))
    untrusted = load_settings({}, cwd=tmp_path)
    assert list(untrusted.mcp_servers) == ["basic"]
    assert untrusted.mcp_servers["basic"]["args"][1] == "basic"  # the user's, not the repo's
    assert "mcp_servers" in untrusted.held_back
    trusted = load_settings({}, cwd=tmp_path, trusted=lambda file, keys: True)
    assert trusted.mcp_servers["basic"]["args"][1] == "crash"
    from swival.mcp.spec import specs_from

    specs, notices = specs_from(trusted)
    assert {s.name: s.trusted for s in specs} == {"basic": False, "extra": False}
    assert any("marks MCP server extra `trust = true`" in n for n in notices)
    off = load_settings({"mcp": False}, cwd=tmp_path)
    assert specs_from(off) == ([], [])


def test_without_servers_the_sdk_is_never_imported(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from swival.config import Settings\n"
        "from swival.session import build_session\n"
        "from swival.commands import dispatch\n"
        "from tests.scripted import ScriptedProvider, reply\n"
        f"s = build_session(Settings(project_root=Path({str(tmp_path)!r})),\n"
        "                  ScriptedProvider([reply('ok')]), interactive=False)\n"
        "list(s.agent.run_turn('hi'))\n"
        "print(dispatch('/mcp', s.agent).text)\n"
        "print('sdk loaded' if 'mcp' in sys.modules else 'sdk not loaded')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], timeout=60)
    assert done.returncode == 0, done.stderr
    assert "No MCP servers in this session" in done.stdout
    assert done.stdout.strip().endswith("sdk not loaded")
