"""The engine with the real Knowledge, SnapshotScope and collapse."""

from __future__ import annotations

from pathlib import Path

from test_context_doubles import SCHEMAS, code_text
from test_context_engine import assert_pairs_intact

from swival.context.engine import ContextEngine, ContextSettings
from swival.context.knowledge import Knowledge
from swival.effects import SnapshotEffect, ThinkEffect
from swival.messages import Message, ToolCall, ToolResult


def _engine(tmp_path: Path) -> ContextEngine:
    return ContextEngine(ContextSettings(window=8192), "You are a coding agent.", SCHEMAS,
                         knowledge=Knowledge(tmp_path), state_dir=tmp_path)


def test_snapshot_restore_collapses_reads_and_pins_summary(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    engine.add_user("why does parse() crash?")
    for n in range(1, 4):
        call = ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"src/p{n}.py"})
        engine.add_assistant(Message(role="assistant", tool_calls=(call,)))
        engine.add_tool_result(call, ToolResult(code_text(40, n), meta={"kind": "file"}),
                               read_only=True)
        engine.after_tool_batch(n)
    snap = ToolCall(id="s", name="snapshot", arguments={})
    engine.add_assistant(Message(role="assistant", tool_calls=(snap,)))
    before = engine.estimate()
    effect = SnapshotEffect("restore", label="parse", summary="parse() indexes an empty list")
    result, events = engine.apply_effect(snap, ToolResult("", effect=effect), 4)
    engine.add_tool_result(snap, result, read_only=True)
    assert events and events[0].level == 0 and engine.estimate() < before - 1000
    prepared = engine.prepare(5)
    assert_pairs_intact(prepared.messages)
    assert any("parse() indexes an empty list" in m.content for m in prepared.messages[:2])


def test_think_goes_through_real_knowledge(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    engine.add_user("plan")
    call = ToolCall(id="t", name="think", arguments={})
    engine.add_assistant(Message(role="assistant", tool_calls=(call,)))
    result, _ = engine.apply_effect(call, ToolResult("", effect=ThinkEffect("step one")), 1)
    assert not result.is_error and result.content
    engine.add_tool_result(call, result, read_only=True)
    engine.after_tool_batch(1)
    assert engine.prepare(2).messages[-1].role == "tool"
