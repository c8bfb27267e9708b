"""The context engine end to end, with stand-ins for knowledge and snapshots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_context_doubles import (
    COUNTER,
    FakeKnowledge,
    FakeScope,
    code_text,
    fake_collapse,
    make_engine,
    tool_turn,
)

from swival.context.engine import ContextEngine, ContextSettings, Extras
from swival.effects import SnapshotEffect, ThinkEffect
from swival.errors import ContextExhausted, ContextOverflowError
from swival.messages import Message, ToolCall, ToolResult, Usage


def assert_pairs_intact(messages: Sequence[Message]) -> None:
    """Every tool message answers a call of the nearest preceding assistant message."""
    open_ids: set[str] = set()
    for m in messages:
        if m.role == "assistant":
            open_ids = {c.id for c in m.tool_calls}
        elif m.role == "tool":
            assert m.tool_call_id in open_ids, f"orphan tool result {m.tool_call_id}"
            open_ids.discard(m.tool_call_id or "")


def test_prefix_stable_without_compaction() -> None:
    engine, knowledge = make_engine(window=32768)
    engine.add_user("explain src/f1.py")
    previous: list[dict[str, object]] = []
    for n in range(1, 12):
        if n == 5:
            knowledge.notes.append("[reminder: 2 todo items open]")
        prepared = engine.prepare(n)
        current = [m.to_dict() for m in prepared.messages]
        assert current[: len(previous)] == previous, f"request {n} rewrote its prefix"
        assert not prepared.events
        previous = current
        tool_turn(engine, n, "read_file", code_text(20, n))
    carriers = [m for m in engine.prepare(12).messages if "[reminder: 2 todo" in m.content]
    assert len(carriers) == 1 and carriers[0].role == "tool"
    assert carriers[0].tool_call_id == "c5"


def test_compaction_keeps_prompt_under_window_and_reaches_target() -> None:
    engine, _ = make_engine(window=8192)
    engine.add_user("fix the failing test")
    shrunk: list[Message] = []
    for n in range(1, 40):
        prepared = engine.prepare(n)
        assert prepared.estimated_tokens <= engine.budget.input_budget
        assert prepared.max_output_tokens >= 256
        assert_pairs_intact(prepared.messages)
        shrunk += [m for m in prepared.messages if "content compacted" in m.content]
        tool_turn(engine, n, "read_file", code_text(50, n))
    assert shrunk and shrunk[0].content.startswith("[read_file: src/f")
    assert engine.estimate() <= engine.budget.trigger


def test_events_report_level_and_tokens() -> None:
    engine, _ = make_engine(window=8192)
    engine.add_user("task")
    events = []
    for n in range(1, 8):
        engine.prepare(n)
        call = ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"f{n}"})
        engine.add_assistant(Message(role="assistant", tool_calls=(call,)))
        engine.add_tool_result(call, ToolResult(code_text(60, n), meta={"kind": "file"}),
                               read_only=True)
        events += engine.after_tool_batch(n)
    assert events and events[0].level == 1 and events[0].reason == "after tool results"
    assert events[0].tokens_after < events[0].tokens_before
    assert events[0].tokens_after <= engine.budget.target


def test_level2_recap_uses_summarizer_and_keeps_user_messages(tmp_path: Path) -> None:
    seen: list[str] = []

    def summarize(instructions: str, messages: Sequence[Message]) -> str:
        seen.append(instructions)
        assert COUNTER.text(instructions + messages[0].content) < 6964
        return "## Task\nfix bug\n## Decisions\nnone"

    engine, _ = make_engine(window=8192, summarize=summarize, state_dir=tmp_path)
    engine.add_user("first request: fix bug in src/app.py")
    for n in range(1, 30):
        if n % 10 == 0:
            engine.add_user(f"also request {n}")
        engine.prepare(n)
        tool_turn(engine, n, "run_command", f"out {n}\n" + "x" * 900)
    event = engine.compact(2, "/compact --drop", 30)
    assert event is not None and event.level == 2
    assert seen and "factual recap" in seen[0] and str(engine.transcript_path) in seen[0]
    texts = [m.content for m in engine.history if m.role == "user"]
    assert any("also request 10" in t for t in texts) and any("also request 20" in t for t in texts)
    pinned = engine.messages()[1].content
    assert "## Recap of earlier work" in pinned and "fix bug" in pinned
    assert "first request: fix bug in src/app.py" in pinned  # the ledger


def test_recap_fallbacks_checkpoint_then_marker() -> None:
    engine, knowledge = make_engine(window=8192, summarize=lambda i, m: None)
    engine.add_user("task")
    for n in range(1, 12):
        tool_turn(engine, n, "run_command", "y" * 500)
    knowledge.checkpoints.append("checkpoint: found the bug in parse()")
    engine.compact(2, "test", 12)
    assert "checkpoint: found the bug in parse()" in engine.messages()[1].content
    engine2, _ = make_engine(window=8192)
    engine2.add_user("task")
    for n in range(1, 12):
        tool_turn(engine2, n, "run_command", "y" * 500)
    engine2.compact(2, "test", 12)
    assert "earlier messages were removed" in engine2.messages()[1].content


def test_nothing_fits_raises_context_exhausted() -> None:
    engine = ContextEngine(ContextSettings(window=1024), "rules " * 900, [],
                           knowledge=FakeKnowledge(),
                           state_dir=None,
                           extras=Extras(counter=COUNTER, scope=FakeScope(),
                                         collapse=fake_collapse))
    engine.add_user("hello")
    with pytest.raises(ContextExhausted, match="larger context window"):
        engine.prepare(1)


def test_overflow_recalibrates_and_compacts_deeper() -> None:
    engine, _ = make_engine(window=8192)
    engine.add_user("task")
    for n in range(1, 6):
        engine.prepare(n)
        tool_turn(engine, n, "read_file", code_text(30, n))
    prepared = engine.prepare(6)
    events = engine.on_overflow(
        ContextOverflowError("too long", prompt_tokens=9000, window=8192), 6)
    assert events and engine.calibration.factor > 1.0
    assert COUNTER.messages(engine.prepare(6).messages) < COUNTER.messages(prepared.messages)
    with pytest.raises(ContextExhausted, match="larger context window"):
        for _ in range(3):  # each overflow goes one level deeper, until none is left
            engine.on_overflow(ContextOverflowError("again"), 6)


def test_record_usage_calibrates_within_clamp() -> None:
    engine, _ = make_engine()
    engine.add_user("hello there")
    prepared = engine.prepare(1)
    engine.record_usage(Usage(prompt_tokens=prepared.estimated_tokens * 2), prepared)
    assert 1.1 < engine.calibration.factor < 1.3
    for _ in range(50):
        engine.record_usage(Usage(prompt_tokens=prepared.estimated_tokens * 3), prepared)
    assert engine.calibration.factor <= 3.0


def test_big_result_is_capped_and_spilled(tmp_path: Path) -> None:
    engine, _ = make_engine(window=8192, state_dir=tmp_path)
    engine.add_user("run the tests")
    call = ToolCall(id="c1", name="run_command", arguments={"command": "pytest"})
    engine.add_assistant(Message(role="assistant", tool_calls=(call,)))
    body = "START\n" + "\n".join(f"test_{i} PASSED" for i in range(5000)) + "\nEND 3 failed"
    seen = engine.add_tool_result(call, ToolResult(body, meta={"kind": "command",
                                                              "exit_code": 1}), read_only=False)
    assert COUNTER.text(seen.content) <= int(engine.budget.input_budget * 0.2)
    assert seen.content.startswith("START") and "END 3 failed" in seen.content
    spilled = Path(seen.meta["spill_path"])
    assert spilled.parent == tmp_path / "out" / engine.session_id
    assert spilled.read_text() == body
    assert engine.history[-1].content == seen.content


def test_transcript_records_everything_and_resumes(tmp_path: Path) -> None:
    engine, _ = make_engine(window=8192, state_dir=tmp_path)
    engine.add_user("fix src/app.py")
    for n in range(1, 12):
        engine.prepare(n)
        meta = {"kind": "command", "exit_code": 1, "changed": [["src/app.py", "modified"]]}
        tool_turn(engine, n, "run_command", f"ValueError: bad {n}\n" + code_text(40, n), meta)
    path = engine.transcript_path
    assert path is not None and path.parent == tmp_path / "sessions"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    kinds = {r["type"] for r in records}
    assert {"message", "compacted", "history"} <= kinds
    assert sum(1 for r in records if r["type"] == "message") == 1 + 2 * 11
    resumed, knowledge = make_engine(window=8192, state_dir=tmp_path)
    assert resumed.load_transcript(path) == len(engine.history)
    assert [m.to_dict() for m in resumed.history] == [m.to_dict() for m in engine.history]
    assert "ValueError: bad 11" in resumed.messages()[1].content  # ledger rebuilt
    assert knowledge.reloaded == 1 and resumed.session_id == path.stem
    resumed.add_user("next")
    assert json.loads(path.read_text().splitlines()[-1])["message"]["content"] == "next"


def test_ledger_survives_nuclear_compaction() -> None:
    engine, _ = make_engine(window=8192)
    engine.add_user("THE TASK: make parse() accept empty input")
    for n in range(1, 20):
        meta = {"kind": "command", "exit_code": 2, "changed": [[f"src/m{n}.py", "modified"]]}
        tool_turn(engine, n, "run_command", f"TypeError: oops {n}\n" + "q" * 300, meta)
    engine._compact_down(20, "test", 3)
    assert len(engine.history) == 4  # the last two turns
    pinned = engine.messages()[1].content
    assert "THE TASK: make parse() accept empty input" in pinned
    assert "src/m19.py (modified)" in pinned and "TypeError: oops 19" in pinned
    assert_pairs_intact(engine.messages())


def test_effects_think_and_snapshot_restore() -> None:
    engine, knowledge = make_engine()
    engine.add_user("investigate")
    for n in range(1, 4):
        tool_turn(engine, n, "read_file", code_text(40, n))
    think = ToolCall(id="t", name="think", arguments={})
    result, events = engine.apply_effect(think, ToolResult("", effect=ThinkEffect("idea")), 4)
    assert result.content == "noted: idea" and not events
    snap = ToolCall(id="s", name="snapshot", arguments={})
    engine.add_assistant(Message(role="assistant", tool_calls=(snap,)))
    before = engine.estimate()
    effect = SnapshotEffect("restore", summary="parse() lacks a None check")
    result, events = engine.apply_effect(snap, ToolResult("", effect=effect), 5)
    assert not result.is_error and events and events[0].level == 0
    assert events[0].reason == "snapshot restore" and engine.estimate() < before
    engine.add_tool_result(snap, result, read_only=True)
    assert_pairs_intact(engine.messages())
    assert "parse() lacks a None check" in engine.messages()[1].content


def test_snapshot_restore_needs_summary_and_force_when_dirty() -> None:
    engine, _ = make_engine()
    engine.add_user("edit")
    tool_turn(engine, 1, "run_command", "done")
    snap = ToolCall(id="s", name="snapshot", arguments={})
    result, _ = engine.apply_effect(snap, ToolResult("", effect=SnapshotEffect("restore")), 2)
    assert result.is_error and "summary" in result.content
    effect = SnapshotEffect("restore", summary="s")
    result, events = engine.apply_effect(snap, ToolResult("", effect=effect), 2)
    assert result.is_error and "force" in result.content and not events


def test_usage_breakdown_and_clear() -> None:
    engine, knowledge = make_engine()
    engine.add_user("hello")
    tool_turn(engine, 1, "read_file", code_text(10))
    usage = engine.usage_breakdown()
    for key in ("system", "tools", "pinned", "user", "assistant", "tool_results", "free",
                "window", "input_budget", "trigger", "target"):
        assert key in usage
    assert usage["window"] == 8192 and usage["tool_results"] > usage["user"] > 0
    engine.clear()
    assert engine.history == () and knowledge.cleared == 1
    assert engine.usage_breakdown()["tool_results"] == 0


def test_huge_user_message_is_capped(tmp_path: Path) -> None:
    engine, _ = make_engine(window=8192, state_dir=tmp_path)
    engine.add_user("please review:\n" + code_text(2000))
    assert COUNTER.text(engine.history[0].content) <= engine.budget.input_budget // 2
    assert "saved to" in engine.history[0].content
    engine.prepare(1)


def test_proactive_summaries_store_checkpoints() -> None:
    engine, knowledge = make_engine(window=16384, proactive=True,
                                    summarize=lambda i, m: "checkpoint recap")
    engine.add_user("long task")
    for n in range(1, 10):
        tool_turn(engine, n, "run_command", "ok")
    engine.end_turn(9)
    assert knowledge.checkpoints == []
    tool_turn(engine, 10, "run_command", "ok")  # inside one long request, every 10 calls
    assert knowledge.checkpoints == ["checkpoint recap"]
    for n in range(11, 20):
        tool_turn(engine, n, "run_command", "ok")
    engine.end_turn(19)
    assert knowledge.checkpoints == ["checkpoint recap"]
    engine.end_turn(20)
    assert knowledge.checkpoints == ["checkpoint recap"] * 2


