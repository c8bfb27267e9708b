"""A reply cut by the output limit is never taken for the answer: it is continued, its
cut tool call is refused, the window is made roomier, or the turn stops with
`output_limit` (exit code 1)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.events import (
    Compacted,
    Continued,
    Event,
    ReplyRestarted,
    ToolFinished,
    TurnFinished,
)
from swival.prompts import system_prompt
from swival.render.lines import tool_line
from swival.tools.base import ToolContext
from swival.tools.catalog import default_tools
from swival.tools.registry import ToolRegistry
from tests.e2e import assert_valid_chat, run_swival
from tests.fakeserver import text
from tests.scripted import ScriptedProvider, call, reply


def agent_for(root: Path, script: list[Any], *, window: int = 8192,
              max_output_tokens: int = 32768) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(script, window=window)
    registry = ToolRegistry(default_tools())
    state = root / ".swival"
    engine = ContextEngine(
        ContextSettings(window=window, max_output_tokens=max_output_tokens),
        system_prompt(root), registry.schemas(), storage=Storage(state),
        server=ServerAid(make_summarizer(provider)))
    return Agent(provider, registry, engine, ToolContext(root=root), AgentConfig()), provider


def cut(item: Any) -> Any:
    return replace(item, finish_reason="length")


def test_cut_reply_is_continued_and_joined(tmp_path: Path) -> None:
    agent, provider = agent_for(tmp_path, [cut(reply("The cause is in parse(), where ")),
                                           reply("an empty list is indexed.")])
    events = list(agent.run_turn("why does parse() crash?"))
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.reason == "done"
    assert finished.answer == "The cause is in parse(), where an empty list is indexed."
    assert [e.count for e in events if isinstance(e, Continued)] == [1]
    second = [m.to_dict() for m in provider.requests[1].messages]
    assert second[-2] == {"role": "assistant", "content": "The cause is in parse(), where "}
    assert second[-1]["role"] == "user" and "cut off by the output limit" in second[-1]["content"]
    assert_valid_chat(second)


def test_cut_tool_call_is_not_run(tmp_path: Path) -> None:
    agent, provider = agent_for(tmp_path, [
        cut(call("write_file", file_path="big.py", content="x = [\n  1,\n  2,")),
        reply("I will write it in parts."),
    ])
    events = list(agent.run_turn("write big.py"))
    assert not (tmp_path / "big.py").exists()
    refused = [e.result for e in events if isinstance(e, ToolFinished)]
    assert len(refused) == 1 and refused[0].is_error
    assert "output limit" in refused[0].content and "smaller pieces" in refused[0].content
    call_made = next(e.call for e in events if isinstance(e, ToolFinished))
    assert tool_line(call_made, refused[0], 0.0, 120).plain.endswith(
        "— not run: the output limit cut the reply off inside this call")  # for the person
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    assert_valid_chat([m.to_dict() for m in provider.requests[1].messages])


def test_turn_stops_after_three_cuts_in_a_row(tmp_path: Path) -> None:
    agent, _ = agent_for(tmp_path, [cut(reply(f"part {n}; ")) for n in range(1, 4)])
    events = list(agent.run_turn("explain everything"))
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.reason == "output_limit"
    assert finished.partial == "part 1; part 2; part 3; "
    assert re.search(r"output limit \(\d+ tokens a reply\) 3 times in a row", finished.answer)
    assert "--max-output-tokens" in finished.answer  # the limit is per reply, not what was cut


def test_cuts_of_an_earlier_request_do_not_count_in_the_next(tmp_path: Path) -> None:
    agent, _ = agent_for(tmp_path, [*(cut(reply(f"part {n}; ")) for n in range(1, 4)),
                                    cut(reply("The answer ")), reply("is 42.")])
    first = list(agent.run_turn("explain everything"))
    assert isinstance(first[-1], TurnFinished) and first[-1].reason == "output_limit"
    events = list(agent.run_turn("then just the answer"))
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.reason == "done"
    assert finished.answer == "The answer is 42."
    assert [e.count for e in events if isinstance(e, Continued)] == [1]


def test_reply_cut_by_the_window_gets_room_and_is_asked_again(tmp_path: Path) -> None:
    # Three reads, each near the window-scaled cap, leave the prompt between the
    # compaction target and its trigger (about 4,800 tokens at 8K, hundreds to spare each
    # way), so a few more tokens of tool schemas do not change the path.
    for n in range(3):
        (tmp_path / f"m{n}.py").write_text("".join(f"value_{n}_{i} = compute({i})\n"
                                                   for i in range(170)))
    script: list[Any] = [call("read_file", file_path=f"m{n}.py") for n in range(3)]
    agent, provider = agent_for(tmp_path, [*script, cut(reply("A long ans")),
                                           reply("A long answer, whole.")])
    events = list(agent.run_turn("summarize the modules"))
    cut_request = provider.requests[3]
    budget = agent.context.budget
    assert budget.target < cut_request.estimated_prompt_tokens < budget.trigger
    made_room = [e for e in events if isinstance(e, Compacted)
                 and e.reason == "reply cut short by the window"]
    assert made_room and made_room[0].tokens_after <= agent.context.budget.target
    void = [i for i, e in enumerate(events) if isinstance(e, ReplyRestarted)]
    assert len(void) == 1 and void[0] < events.index(made_room[0])  # the cut reply is void
    assert not [e for e in events if isinstance(e, Continued)]  # asked again, not continued
    assert isinstance(events[-1], TurnFinished) and events[-1].answer == "A long answer, whole."
    assert "A long ans" not in json.dumps([m.to_dict() for m in provider.requests[4].messages])


def test_max_tokens_never_exceeds_the_room_left(tmp_path: Path) -> None:
    for n in range(6):
        (tmp_path / f"m{n}.py").write_text("".join(f"value_{n}_{i} = compute({i})\n"
                                                   for i in range(150)))
    script: list[Any] = [call("read_file", file_path=f"m{n}.py") for n in range(6)]
    agent, provider = agent_for(tmp_path, [*script, reply("done")], max_output_tokens=20)
    events: list[Event] = list(agent.run_turn("read them"))
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    assert {r.max_output_tokens for r in provider.requests} == {20}  # honoured as given
    agent, provider = agent_for(tmp_path / "big", [reply("hi")], window=4096)
    list(agent.run_turn("hello"))
    for request in provider.requests:
        assert request.estimated_prompt_tokens + request.max_output_tokens <= 4096


def test_one_shot_exit_code_and_json_when_ollama_keeps_cutting(fake_server: Any,
                                                               tmp_path: Path) -> None:
    server = fake_server(kind="ollama", window=8192)
    server.script(*(text(f"chunk {n} ", finish_reason="length") for n in range(3)))
    result = run_swival(server, tmp_path, "--json", "-p", "tell me everything")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["exit_reason"] == "output_limit" and report["exit_code"] == 1
    assert report["answer"] == "chunk 0 chunk 1 chunk 2 "
    assert "output limit" in report["error"]
    server.script(*(text(f"chunk {n} ", finish_reason="length") for n in range(3)))
    plain = run_swival(server, tmp_path, "-q", "-p", "tell me everything")
    assert plain.returncode == 1
    assert plain.stdout.strip() == "chunk 0 chunk 1 chunk 2"
    assert "swival: The reply was cut off by the output limit" in plain.stderr
