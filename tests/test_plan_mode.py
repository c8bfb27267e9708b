"""Plan mode: --read-only and /plan offer the model only the tools that change nothing,
refuse the others if it calls them anyway, and tell it so at the tail of the prompt."""

from __future__ import annotations

import re
from pathlib import Path

from swival.commands import dispatch
from swival.config import Settings
from swival.errors import ContextOverflowError
from swival.events import Compacted
from swival.messages import ToolCall
from swival.providers.base import ChatRequest
from swival.session import build_session
from swival.tools.base import ToolContext
from swival.tools.catalog import default_tools
from swival.tools.registry import ToolRegistry
from tests.e2e import run_swival
from tests.fakeserver import FakeServer
from tests.fakeserver import Reply as ServerReply
from tests.scripted import Reply, ScriptedProvider, call, reply

CHANGING = {"write_file", "edit_file", "run_command"}


def test_a_read_only_registry_offers_and_runs_only_read_only_tools(tmp_path: Path) -> None:
    registry = ToolRegistry(default_tools(), read_only=True)
    offered = {s["function"]["name"] for s in registry.schemas()}
    assert offered and not offered & CHANGING and "read_file" in offered
    result = registry.run(ToolCall("c", "write_file", {"file_path": "x", "content": "y"}),
                          ToolContext(root=tmp_path))
    assert result.is_error and "read-only (plan mode)" in result.content
    assert "/plan" in result.content and not (tmp_path / "x").exists()
    assert result.meta["summary"] == "not run: plan mode (read-only tools only)"  # one-shot too


def test_plan_toggles_the_tools_and_tells_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider([
        call("write_file", file_path="x.py", content="x"), reply("I will only plan."),
        reply("Back to work."),
    ])
    session = build_session(Settings(project_root=tmp_path, max_output_tokens=1024),
                            provider, interactive=True)
    full = session.agent.context.usage().tools
    on = dispatch("/plan", session.agent)
    assert "Plan mode on" in on.text
    assert "whole prompt again" not in on.text  # before the first request nothing is cached
    assert session.agent.context.usage().tools < full
    list(session.agent.run_turn("plan it"))
    names = {s["function"]["name"] for s in provider.requests[0].tools}
    assert not names & CHANGING
    assert "[Plan mode: from now on" in provider.requests[0].messages[-1].content
    refused = provider.requests[1].messages[-1]
    assert refused.role == "tool" and "read-only (plan mode)" in refused.content
    assert not (tmp_path / "x.py").exists()
    off = dispatch("/plan", session.agent)
    assert "Plan mode off" in off.text and "whole prompt again" in off.text
    assert session.agent.context.usage().tools == full
    list(session.agent.run_turn("now do it"))
    assert {s["function"]["name"] for s in provider.requests[2].tools} >= CHANGING
    assert "[Plan mode is over" in provider.requests[2].messages[-1].content


def plan_notes(text: str) -> list[str]:
    return re.findall(r"\[Plan mode[^\]]*\]", text)


def test_toggling_before_a_request_sends_one_note_for_the_mode_in_force(
        tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("Planning."), reply("Still planning."), reply("Done.")])
    session = build_session(Settings(project_root=tmp_path, max_output_tokens=1024,
                                     read_only=True), provider, interactive=True)
    dispatch("/plan", session.agent)
    dispatch("/plan", session.agent)  # back on: the model only needs to hear "on", once
    list(session.agent.run_turn("plan it"))
    notes = plan_notes(provider.requests[0].messages[-1].content)
    assert len(notes) == 1 and notes[0].startswith("[Plan mode: from now on")
    dispatch("/plan", session.agent)
    dispatch("/plan", session.agent)  # off and on again: the model knows it is on already
    list(session.agent.run_turn("go on"))
    assert plan_notes(provider.requests[1].messages[-1].content) == []
    dispatch("/clear", session.agent)  # the conversation that told it is gone
    list(session.agent.run_turn("start over"))
    assert len(plan_notes(provider.requests[2].messages[-1].content)) == 1


def test_one_shot_read_only_sends_only_read_only_tools(tmp_path: Path) -> None:
    with FakeServer(kind="llamacpp") as server:
        server.script(ServerReply(text="Here is how it works."))
        done = run_swival(server, tmp_path, "-p", "explain the project", "--read-only")
    assert done.returncode == 0, done.stderr
    assert "Plan mode (--read-only)" in done.stderr
    sent = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert sent and not sent & CHANGING
    assert "[Plan mode: from now on" in server.requests[0]["messages"][-1]["content"]


def test_plan_mode_is_told_again_once_compaction_dropped_the_note(tmp_path: Path) -> None:
    """The note saying plan mode is on goes with its request when a compaction drops
    old requests (level 3 or the emergency drop, here forced by a server rejecting the
    prompt twice);
    the next request tells the model again (at the prompt's tail, so nothing before it
    is computed again), once."""
    rejected = ContextOverflowError("the prompt is too long")
    recap = "The user is planning a change in steps; nothing was edited."
    answers = iter([*(f"Planned step {n}." for n in range(1, 5)), rejected, rejected,
                    "Planned step 5.", "Still only planning.", "And the last step."])

    def model(request: ChatRequest) -> Reply | ContextOverflowError:
        if not request.tools:  # a recap call
            return reply(recap)
        answer = next(answers)
        return answer if isinstance(answer, ContextOverflowError) else reply(answer)

    provider = ScriptedProvider([model] * 12)
    session = build_session(Settings(project_root=tmp_path, max_output_tokens=1024,
                                     read_only=True), provider, interactive=True)
    agent = session.agent
    for n in range(1, 5):
        list(agent.run_turn(f"plan step {n}"))
    assert len(plan_notes(provider.requests[0].messages[-1].content)) == 1
    events = list(agent.run_turn("plan step 5"))
    assert [e for e in events if isinstance(e, Compacted) and e.level >= 3]  # turns dropped
    assert not plan_notes("\n".join(m.content for m in agent.context.history))
    list(agent.run_turn("go on planning"))
    notes = plan_notes(provider.requests[-1].messages[-1].content)
    assert len(notes) == 1 and notes[0].startswith("[Plan mode: from now on")
    list(agent.run_turn("and the last step"))
    assert plan_notes(provider.requests[-1].messages[-1].content) == []  # told already
