"""The agent loop with the real tools and context engine against a scripted provider."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.errors import ContextOverflowError
from swival.events import (
    Compacted,
    Event,
    ReplyRestarted,
    TextDelta,
    ToolFinished,
    TurnFinished,
)
from swival.messages import ToolResult
from swival.prompts import system_prompt
from swival.providers.base import ChatRequest, Restart, StreamItem
from swival.redaction import Redactor
from swival.tools.base import Tool, ToolContext, ToolSpec
from swival.tools.catalog import default_tools
from swival.tools.registry import ToolRegistry
from tests.e2e import assert_valid_chat
from tests.scripted import ScriptedProvider, call, calls, reply


def make_agent(root: Path, script: list[Any], *, window: int = 8192, max_turns: int = 20,
               redactor: Redactor | None = None, extra_tools: tuple[Tool, ...] = ()
               ) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(script, window=window)
    registry = ToolRegistry([*default_tools(), *extra_tools])
    state = root / ".swival"
    engine = ContextEngine(
        ContextSettings(window=window, max_output_tokens=1024), system_prompt(root),
        registry.schemas(), storage=Storage(state),
        server=ServerAid(make_summarizer(provider)),
    )
    redactor = redactor or Redactor()
    agent = Agent(provider, registry, engine, ToolContext(root=root, redactor=redactor),
                  AgentConfig(max_turns=max_turns, redactor=redactor))
    return agent, provider


def run(agent: Agent, text: str) -> list[Event]:
    events: list[Event] = []
    try:
        for event in agent.run_turn(text):
            events.append(event)
    except KeyboardInterrupt:
        events.append(agent.interrupted())
    return events


def test_read_edit_run_answer(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("print('hello')\n")
    agent, provider = make_agent(tmp_path, [
        call("read_file", file_path="app.py"),
        call("edit_file", file_path="app.py", old_string="hello", new_string="bye"),
        call("run_command", command="python3 app.py"),
        reply("Changed the greeting to bye.", usage=(900, 9)),
    ])
    events = run(agent, "make it say bye")
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert (finished.reason, finished.turns, finished.tool_calls) == ("done", 4, 3)
    assert finished.answer == "Changed the greeting to bye."
    assert (tmp_path / "app.py").read_text() == "print('bye')\n"
    results = [e.result for e in events if isinstance(e, ToolFinished)]
    assert [r.is_error for r in results] == [False, False, False]
    assert "bye" in results[2].content
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == finished.answer
    last = [m.to_dict() for m in provider.requests[-1].messages]
    assert last[0]["role"] == "system" and last[1] == {"role": "user",
                                                      "content": "make it say bye"}
    assert_valid_chat(last)
    assert all(len(r.tools) == len(default_tools()) for r in provider.requests)


def test_requests_are_append_only_between_compactions(tmp_path: Path) -> None:
    for i in range(4):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n")
    agent, provider = make_agent(tmp_path, [
        *[call("read_file", file_path=f"f{i}.txt") for i in range(4)], reply("done"),
    ])
    run(agent, "read everything")
    sent = [[m.to_dict() for m in r.messages] for r in provider.requests]
    for before, after in zip(sent, sent[1:], strict=False):
        assert after[: len(before)] == before


def test_turn_limit_stops_with_reason(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x")
    agent, _ = make_agent(tmp_path, [call("list_files", path="."),
                                     call("read_file", file_path="a")], max_turns=2)
    finished = run(agent, "loop")[-1]
    assert isinstance(finished, TurnFinished) and finished.reason == "max_turns"
    assert "--max-turns" in finished.answer


class Interrupting:
    """A tool that behaves like Ctrl-C arriving while it runs."""

    spec = ToolSpec("slow", "Slow.", {"type": "object", "properties": {}})
    read_only = True

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        raise KeyboardInterrupt


def test_interrupt_during_a_tool_answers_every_pending_call(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x")
    agent, provider = make_agent(
        tmp_path,
        [calls(("read_file", {"file_path": "a"}), ("slow", {}), ("list_files", {})),
         reply("next answer")],
        extra_tools=(Interrupting(),),
    )
    finished = run(agent, "go")[-1]
    assert isinstance(finished, TurnFinished) and finished.reason == "interrupted"
    run(agent, "and now?")
    sent = [m.to_dict() for m in provider.requests[-1].messages]
    assert_valid_chat(sent)
    interrupted = [m for m in sent if m["role"] == "tool" and "interrupted" in m["content"]]
    assert len(interrupted) == 2


def test_interrupt_during_the_model_call_keeps_roles_alternating(tmp_path: Path) -> None:
    agent, provider = make_agent(tmp_path, [KeyboardInterrupt(), reply("fine")])
    assert run(agent, "first")[-1].reason == "interrupted"  # type: ignore[union-attr]
    assert run(agent, "second")[-1].answer == "fine"  # type: ignore[union-attr]
    assert_valid_chat([m.to_dict() for m in provider.requests[-1].messages])


def test_overflow_reported_by_the_server_compacts_and_retries(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i} " * 12 + "\n" for i in range(300)))
    agent, provider = make_agent(tmp_path, [
        call("read_file", file_path="big.txt"),
        call("read_file", file_path="big.txt", offset=100),
        ContextOverflowError("too long", kind="rejected"),
        reply("recap text"),  # the level-1/2 recap call, if the engine asks for one
        reply("answer after compaction"),
        reply("spare"),
    ])
    events = run(agent, "read big.txt")
    assert any(isinstance(e, Compacted) for e in events)
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.reason == "done"
    assert finished.answer in ("answer after compaction", "recap text")


def test_api_keys_never_reach_the_model(tmp_path: Path) -> None:
    secret = "sk-test-1234567890abcdef"
    (tmp_path / "env.txt").write_text(f"OPENAI_API_KEY={secret}\n")
    agent, provider = make_agent(tmp_path, [call("read_file", file_path="env.txt"),
                                            reply("ok")],
                                 redactor=Redactor.of({"OPENAI_API_KEY": secret}))
    run(agent, f"show env, my key is {secret}")
    sent = str([m.to_dict() for m in provider.requests[-1].messages])
    assert secret not in sent and sent.count("[redacted:OPENAI_API_KEY]") >= 2


class Leaky:
    """A tool that puts a secret in its text and its metadata (a diff, say)."""

    read_only = True
    spec = ToolSpec("leaky", "Leaks.", {"type": "object", "properties": {}})

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(f"value {self.secret}", meta={"diff": [f"+{self.secret}"]})


def test_every_tool_result_is_redacted_text_and_metadata(tmp_path: Path) -> None:
    secret = "sk-test-abcdef1234567890"
    agent, provider = make_agent(tmp_path, [call("leaky"), reply("ok")],
                                 redactor=Redactor.of({"OPENAI_API_KEY": secret}),
                                 extra_tools=(Leaky(secret),))
    finished = [e for e in run(agent, "go") if isinstance(e, ToolFinished)]
    assert finished[0].result.content == "value [redacted:OPENAI_API_KEY]"
    assert finished[0].result.meta["diff"] == ["+[redacted:OPENAI_API_KEY]"]
    assert secret not in str(provider.requests[-1].messages)


@pytest.mark.parametrize("window", [4096, 8192])
def test_every_request_fits_the_window(tmp_path: Path, window: int) -> None:
    for i in range(12):
        (tmp_path / f"m{i}.py").write_text("".join(f"def f{j}(): return {j}\n"
                                                   for j in range(150)))
    script: list[Any] = [call("read_file", file_path=f"m{i}.py") for i in range(12)]
    script += [reply("summary") for _ in range(12)]
    agent, provider = make_agent(tmp_path, script, window=window, max_turns=30)
    events = run(agent, "read all modules")
    assert isinstance(events[-1], TurnFinished)
    from swival.context.tokens import TokenCounter

    counter = TokenCounter()
    for request in provider.requests:
        tokens = counter.messages(request.messages) + counter.schemas(request.tools)
        assert tokens + request.max_output_tokens <= window
        assert_valid_chat([m.to_dict() for m in request.messages])


def recap_or(answer: str) -> Any:
    """A scripted model that answers recap requests (sent without tools) with a recap."""
    def react(request: ChatRequest) -> Any:
        return reply("recap of the dropped turns" if not request.tools else answer)
    return react


def test_level_3_keeps_think_todo_snapshot_and_ledger_in_the_next_request(tmp_path: Path,
                                                                           ) -> None:
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text("".join(f"def f{i}_{j}(): return {j}\n"
                                                   for j in range(80)))
    overflow = ContextOverflowError("too long", kind="rejected")
    agent, provider = make_agent(tmp_path, [
        call("think", thought="THOUGHT-41: the parser drops None tokens."),
        call("todo", action="add", text="TODO-77 guard the parser"),
        call("snapshot", action="save", label="scan"),
        call("read_file", file_path="m0.py"),
        call("snapshot", action="restore", summary="SUMMARY-93: m0 defines f0_*."),
        *[call("read_file", file_path=f"m{i}.py") for i in range(1, 6)],
        overflow, overflow, overflow,
        *[recap_or("done")] * 6,
    ], window=8192)
    events = run(agent, "REQUEST-12: find why the parser fails")
    levels = [e.level for e in events if isinstance(e, Compacted)]
    # The recap request meets the second scripted overflow: no recap, so the deepest
    # step is the emergency drop (level 4), which keeps the pinned block all the same.
    assert max(levels) >= 3, levels
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.answer == "done"
    sent = str([m.to_dict() for m in provider.requests[-1].messages])
    for fact in ("THOUGHT-41", "TODO-77", "SUMMARY-93", "REQUEST-12"):
        assert fact in sent, fact
    assert_valid_chat([m.to_dict() for m in provider.requests[-1].messages])


class RestartingProvider(ScriptedProvider):
    """Fails once before any text with a reason naming the server's URL, which holds the
    key (`--base-url 'https://host/?key=...'`), then answers from the script."""

    def __init__(self, script: list[Any], secret: str) -> None:
        super().__init__(script)
        self.secret = secret

    def stream(self, request: ChatRequest) -> Iterator[StreamItem]:
        yield Restart(f"No reply yet: cannot connect to https://gw/?key={self.secret}, "
                      "retrying in 1.0 s (attempt 2 of 4).")
        yield from super().stream(request)


def test_a_retry_reason_is_redacted(tmp_path: Path) -> None:
    secret = "sk-test-0987654321fedcba"
    agent, _ = make_agent(tmp_path, [], redactor=Redactor.of({"api_key": secret}))
    agent.provider = RestartingProvider([reply("ok")], secret)
    events = run(agent, "hi")
    [restarted] = [e for e in events if isinstance(e, ReplyRestarted)]
    assert secret not in restarted.reason and "key=[redacted:api_key]" in restarted.reason

