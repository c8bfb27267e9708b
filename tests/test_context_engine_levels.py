"""Level 2 freeing enough to spare level 3, the pinned block not repeating what the
history still shows, the order of the snapshot calls, and the engine's public shape."""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from test_context_doubles import (
    COUNTER,
    SCHEMAS,
    FakeKnowledge,
    FakeScope,
    code_text,
    fake_collapse,
    make_engine,
    tool_turn,
)

from swival.context.engine import ContextEngine, ContextSettings, Extras
from swival.effects import SnapshotEffect
from swival.messages import Message, ToolCall, ToolResult


def _busy_engine() -> ContextEngine:
    """An 8K engine with a task, many old command turns and two large recent reads,
    none compacted yet."""
    engine, _ = make_engine(window=8192)
    engine.add_user("THE TASK: make parse() accept empty input")
    n = 0
    while engine.estimate() < engine.budget.trigger - 2600:
        n += 1
        call = ToolCall(id=f"c{n}", name="run_command", arguments={"command": f"make t{n}"})
        engine._append(Message(role="assistant", content=f"step {n} " + "why " * 30,
                               tool_calls=(call,)))
        engine.add_tool_result(call, ToolResult(f"out {n}\n" + "v" * 200,
                                                meta={"kind": "command", "exit_code": 0}),
                               read_only=False)
    for n in (98, 99):
        call = ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"big{n}.py"})
        engine._append(Message(role="assistant", tool_calls=(call,)))
        engine.add_tool_result(call, ToolResult(code_text(90, n), meta={"kind": "file"}),
                               read_only=True)
    return engine


def test_level_two_frees_enough_to_spare_level_three() -> None:
    engine = _busy_engine()
    old_turns = sum(1 for m in engine.history if m.role == "assistant") - 2
    events = engine._compact_down(50, "test", 2)
    assert [e.level for e in events] == [2]
    assert engine.estimate() <= engine.budget.target
    kept_turns = sum(1 for m in engine.history if m.role == "assistant") - 2
    assert kept_turns < old_turns // 2  # more than the lower-scoring half went
    assert engine.history[0].content.startswith("THE TASK")  # user messages stay


def test_pinned_block_does_not_repeat_a_request_still_shown() -> None:
    engine = _busy_engine()
    engine._compact_down(50, "test", 2)
    head = engine.messages()[1]  # pinned block folded into the first user message
    assert head.role == "user" and head.content.count("THE TASK") == 1
    assert "(still in the conversation)" in head.content
    engine._compact_down(51, "test", 3)
    pinned = engine.messages()[1].content
    assert "THE TASK: make parse() accept empty input" in pinned  # now only here


def test_shrunk_failures_keep_their_error_line_without_a_pinned_block() -> None:
    engine, _ = make_engine(window=16384)
    engine.add_user("fix the tests")
    failing = ("collected 9 items\n" + "progress line\n" * 40
               + "E   AssertionError: 3 != 4\n" + "more output\n" * 40 + "1 failed, 8 passed\n")
    tool_turn(engine, 1, "run_command", failing, {"kind": "command", "exit_code": 1})
    for n in range(2, 60):
        tool_turn(engine, n, "run_command", "ok\n" + "w" * 900)
        if any(m.role == "tool" and "characters compacted" in m.content
               for m in engine.history[:3]):
            break
    first = engine.history[2].content
    assert "characters compacted" in first and "E   AssertionError: 3 != 4" in first


@dataclass
class OrderScope(FakeScope):
    calls: list[str] = field(default_factory=list)

    def scope_start(self, history: Sequence[Message]) -> int:
        self.calls.append("scope_start")
        return super().scope_start(history)

    def restore_check(self, force: bool) -> str | None:
        self.calls.append("restore_check")
        return super().restore_check(force)


def test_restore_asks_where_the_scope_starts_before_checking_it() -> None:
    scope = OrderScope()
    engine = ContextEngine(ContextSettings(window=8192), "sys", SCHEMAS,
                           knowledge=FakeKnowledge(), state_dir=None,
                           summarize=lambda i, m: "recap",
                           extras=Extras(counter=COUNTER, scope=scope, collapse=fake_collapse))
    engine.add_user("look around")
    tool_turn(engine, 1, "read_file", "x = 1\n" * 20)
    call = ToolCall(id="s", name="snapshot", arguments={})
    engine.add_assistant(Message(role="assistant", tool_calls=(call,)))
    effect = SnapshotEffect(action="restore", summary="x is 1")
    result, events = engine.apply_effect(call, ToolResult("", effect=effect), 2)
    assert not result.is_error and events
    assert scope.calls == ["scope_start", "restore_check"]
    message, _ = engine.snapshot_restore(False, 3)
    assert scope.calls[2:] == ["scope_start", "restore_check"]


PUBLIC = {
    "add_user": "(self, text: 'str') -> 'None'",
    "add_assistant": "(self, message: 'Message') -> 'None'",
    "add_tool_result": "(self, call: 'ToolCall', result: 'ToolResult', *, read_only: 'bool')"
                       " -> 'ToolResult'",
    "apply_effect": "(self, call: 'ToolCall', result: 'ToolResult', turn: 'int')"
                    " -> 'tuple[ToolResult, list[Compacted]]'",
    "after_tool_batch": "(self, turn: 'int') -> 'list[Compacted]'",
    "prepare": "(self, turn: 'int') -> 'Prepared'",
    "record_usage": "(self, usage: 'Usage', prepared: 'Prepared') -> 'ContextOverflowError | None'",
    "on_overflow": "(self, error: 'ContextOverflowError', turn: 'int') -> 'list[Compacted]'",
    "end_turn": "(self, turn: 'int') -> 'list[Compacted]'",
    "compact": "(self, level: 'int', reason: 'str', turn: 'int') -> 'Compacted | None'",
    "usage_breakdown": "(self) -> 'dict[str, int]'",
    "clear": "(self) -> 'None'",
    "load_transcript": "(self, path: 'Path') -> 'int'",
    "snapshot_save": "(self, label: 'str | None') -> 'str'",
    "snapshot_cancel": "(self) -> 'str'",
    "snapshot_status": "(self) -> 'str'",
    "snapshot_restore": "(self, force: 'bool', turn: 'int') -> 'tuple[str, Compacted | None]'",
    "messages": "(self) -> 'list[Message]'",
    "estimate": "(self) -> 'int'",
}


def test_public_methods_keep_their_signatures() -> None:
    for name, signature in PUBLIC.items():
        assert str(inspect.signature(getattr(ContextEngine, name))) == signature, name
    engine, knowledge = make_engine(window=8192)
    assert engine.knowledge is knowledge and isinstance(engine.history, tuple)
    for attribute in ("session_id", "transcript_path", "scope", "budget", "calibration",
                      "settings", "summarize"):
        assert hasattr(engine, attribute), attribute


def test_fallback_markers_merge_instead_of_stacking() -> None:
    """Without a summarizer, level 2 then level 3 leave one marker counting both drops."""
    engine = _busy_engine()
    assert engine.summarize is None
    engine._run_level(2, "test", 50)
    engine._run_level(3, "test", 51)
    pinned = engine.messages()[1].content
    markers = re.findall(r"\[(\d+) earlier messages were removed", pinned)
    assert len(markers) == 1, pinned
    assert int(markers[0]) > 2
