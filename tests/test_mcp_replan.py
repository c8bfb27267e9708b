"""The MCP schema plan follows what it was made for: /model to a smaller window plans the
servers' schemas again before the next request (against a loopback model server that
holds each model to its window), and plan mode (--read-only, /plan) offers and budgets
only the tools a server marks read-only, mcp_call included."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swival.commands import dispatch
from swival.config import global_config_path, load_settings
from swival.context.tokens import TokenCounter
from swival.events import Event, ToolFinished, TurnFinished
from swival.session import Session, build_session, open_session
from tests.fakeserver import text
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


def turn(session: Session, request: str) -> list[Event]:
    return list(session.agent.run_turn(request))


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [schema["function"]["name"] for schema in tools]


def test_model_to_a_smaller_window_plans_the_schemas_again(
        fake_server: Any, tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("basic", "basic", trust="true"), table("many", "many", trust="true"))
    server = fake_server(kind="lmstudio", window=32_768, others={"small": 8192})
    server.script(text("Hello back."), text("Second."))
    settings = load_settings({"provider": "lmstudio", "base_url": server.url,
                              "max_output_tokens": 32_768}, cwd=tmp_path)
    session = open_session(settings, interactive=False)
    sessions.append(session)
    turn(session, "hi")
    at_32k = server.requests[0]["tools"]
    assert "mcp__many__search_collection_07" in names(at_32k)  # shortened, still sent
    assert TokenCounter().schemas(at_32k) > 6964  # more than the whole 8K input budget

    switched = dispatch("/model small", session.agent)
    assert "Now using small, window 8192" in switched.text
    assert "MCP tool schemas planned again for the 6964-token input budget" in switched.text
    assert "held back many (reached through mcp_list and mcp_call)" in switched.text
    assert switched.level == "warning"
    # one concise reply: the figures once, one sentence about re-processing
    assert "Now 2" not in switched.text and switched.text.count("again on the next") == 1
    reprocessed = session.agent.context.usage().reprocessed
    estimate = session.agent.context.estimate()  # calibrated afresh for the new model
    assert 0.8 * estimate < reprocessed < 1.2 * estimate  # the whole prompt, counted once
    assert f"changes to the tool list (/mcp, /plan): {reprocessed}." in dispatch(
        "/context", session.agent).footer

    events = turn(session, "again")
    assert isinstance(events[-1], TurnFinished) and events[-1].answer == "Second."
    at_8k = server.requests[1]
    assert at_8k["model"] == "small"
    assert {"mcp_list", "mcp_call", "mcp__basic__add"} <= set(names(at_8k["tools"]))
    assert not any(n.startswith("mcp__many__") for n in names(at_8k["tools"]))
    assert TokenCounter().schemas(at_8k["tools"]) <= 0.5 * 6964
    restarted = dispatch("/mcp restart many", session.agent)  # back with the same tools
    assert "Tool schemas take" not in restarted.text  # the warning was given once
    assert "re-process" not in restarted.text and "if their tools changed" in restarted.footer
    rows = {row[0]: row for row in dispatch("/mcp", session.agent).rows}
    assert rows["many"][5] == "via mcp_call"


def test_read_only_offers_and_budgets_only_the_hinted_tools(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("mixed", "mixed", trust="true"), table("basic", "basic", trust="true"))
    provider = ScriptedProvider([
        call("mcp_list", server="mixed"),
        call("mcp_call", server="mixed", tool="search_collection_04",
             arguments={"query": "status:open"}),
        call("mcp_call", server="mixed", tool="search_collection_05",
             arguments={"query": "status:open"}),
        call("mcp__basic__add", a=2, b=3),
        call("mcp__basic__echo", text="hi"),  # not offered: said why, not "no such tool"
        reply("Planned."),
    ], window=8192)
    session = build_session(load_settings({"read_only": True}, cwd=tmp_path), provider,
                            interactive=False)
    sessions.append(session)
    events = turn(session, "plan a search")
    offered = names(provider.requests[0].tools)
    assert {"mcp_list", "mcp_call", "mcp__basic__add"} <= set(offered)
    assert "mcp__basic__echo" not in offered and "write_file" not in offered
    results = [e.result for e in events if isinstance(e, ToolFinished)]
    assert results[0].content.startswith("30 tools of mixed")
    assert "only the tools the server marks read-only" in results[0].content
    assert "search_collection_05" not in results[0].content
    assert results[1].content == "tool 4: status:open (limit 10)" and not results[1].is_error
    assert results[2].is_error and results[2].content.startswith(
        "error: search_collection_05 of mixed is not available in plan mode: the server does "
        "not mark it read-only (readOnlyHint)")
    assert "leave plan mode (/plan in the REPL; a new run without --read-only)" \
        in results[2].content
    assert results[2].meta["summary"] == ("not available in plan mode: the server does not "
                                          "mark it read-only")
    assert results[3].content == "5"
    assert results[4].is_error and results[4].content.startswith(
        "error: echo of basic is not available in plan mode: the server does not mark it "
        "read-only (readOnlyHint)")
    assert results[4].meta["summary"] == ("not available in plan mode: the server does not "
                                          "mark it read-only")
    plan = session.mcp.plan if session.mcp else None
    assert plan is not None and {s.name: s.tools for s in plan.servers} == {
        "mixed": 30, "basic": 1}  # the budget counts only what is offered


def test_a_read_only_subagent_reaches_held_servers_only_through_hinted_tools(
        tmp_path: Path, sessions: list[Session]) -> None:
    """The parent's mcp_call reaches unhinted tools, so a read-only child gets mcp_list and
    mcp_call narrowed to the hinted ones (not mcp_list alone), and is told why the others
    are refused."""
    write_global(table("mixed", "mixed", trust="true"))
    parent = [call("task", description="search", prompt="Search the open items."),
              reply("Done.")]
    child = [call("mcp_list", server="mixed"),
             call("mcp_call", server="mixed", tool="search_collection_04",
                  arguments={"query": "status:open"}),
             call("mcp_call", server="mixed", tool="search_collection_05",
                  arguments={"query": "status:open"}),
             call("mcp_call", server="mixed", tool="nothing_like_it"),
             call("mcp__mixed__search_collection_04", query="x"),  # by its own name
             reply("Found tool 4.")]
    queues = {True: parent, False: child}
    provider = ScriptedProvider([lambda request: queues["task" in names(
        request.tools)].pop(0)] * 8, window=8192)
    session = build_session(load_settings({}, cwd=tmp_path), provider, interactive=False)
    sessions.append(session)
    steps: list[Any] = []
    session.agent.tool_ctx.on_event = steps.append
    turn(session, "search")
    assert not session.agent.tools.is_read_only("mcp_call")  # the parent's reaches them all
    child_tools = names(provider.requests[1].tools)
    assert {"mcp_list", "mcp_call"} <= set(child_tools)
    results = [s.result for s in steps if s.result is not None]
    assert "only the tools the server marks read-only" in results[0].content
    assert "To a read-only subagent" in results[0].content
    assert "search_collection_05" not in results[0].content
    assert results[1].content == "tool 4: status:open (limit 10)" and not results[1].is_error
    assert results[2].is_error and results[2].content.startswith(
        "error: search_collection_05 of mixed is not available to a read-only subagent")
    assert "Say in your answer which call is needed" in results[2].content
    assert results[3].is_error and "no tool 'nothing_like_it' there" in results[3].content
    assert results[4].is_error and results[4].content.startswith(
        "error: mixed's tools are not in your tool list; reach this one through mcp_call")


def test_plan_toggles_replan_mcp_call_once_counted(
        tmp_path: Path, sessions: list[Session]) -> None:
    write_global(table("mixed", "mixed", trust="true"))
    provider = ScriptedProvider([reply("Ready.")], window=8192)
    session = build_session(load_settings({}, cwd=tmp_path), provider, interactive=False)
    sessions.append(session)
    turn(session, "hello")
    assert "mcp_call" in session.agent.tools.names
    assert not session.agent.tools.is_read_only("mcp_call")  # it reaches unhinted tools

    on = dispatch("/plan", session.agent)
    assert "Plan mode on" in on.text
    assert "MCP tool schemas planned again for the 6964-token input budget in plan mode" \
        in on.text
    assert session.agent.tools.is_read_only("mcp_call") and "mcp_call" in on.text
    assert on.text.count("again on the next request") == 1 and "Tool schemas take" not in on.text
    context = session.agent.context
    assert context.usage().reprocessed == context.estimate()  # two changes, one count
    provider.add(call("mcp_call", server="mixed", tool="search_collection_03",
                      arguments={"query": "x"}), reply("Refused, as planned."))
    events = turn(session, "search 3")
    refused = [e.result for e in events if isinstance(e, ToolFinished)][0]
    assert refused.is_error and "readOnlyHint" in refused.content

    off = dispatch("/plan", session.agent)  # mcp_call's schema is the same: not re-planned
    assert "Plan mode off" in off.text and "processes the whole prompt again" in off.text
    provider.add(call("mcp_call", server="mixed", tool="search_collection_03",
                      arguments={"query": "x"}), reply("Done."))
    events = turn(session, "search 3 again")
    done = [e.result for e in events if isinstance(e, ToolFinished)][0]
    assert done.content == "tool 3: x (limit 10)" and not done.is_error
