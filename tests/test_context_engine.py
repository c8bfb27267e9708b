"""The context engine through its public calls, with the real knowledge store, ledger
and transcript: what reaches the model, when and how compaction rewrites it, what
it costs the server's cache, and what survives."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.context.gate import Policy
from swival.context.tokens import TokenCounter
from swival.effects import SnapshotEffect, ThinkEffect
from swival.errors import ContextExhausted, ContextOverflowError
from swival.events import Checkpointed, Compacted
from swival.messages import Message, ToolCall, ToolResult
from swival.tools.catalog import default_tools
from swival.tools.registry import ToolRegistry
from tests.e2e import assert_valid_chat

COUNTER = TokenCounter()
SCHEMAS = ToolRegistry(default_tools()).schemas()


def make_engine(tmp_path: Path, window: int = 8192, *, summarize: object = None,
                proactive: bool = False, state: bool = True) -> ContextEngine:
    folder = tmp_path / ".swival"
    return ContextEngine(
        ContextSettings(window=window, proactive_summaries=proactive),
        "You are a coding agent. Be brief.", SCHEMAS,
        storage=Storage(folder) if state else None,
        server=ServerAid(summarize))  # type: ignore[arg-type]


def code_text(lines: int, seed: int = 0) -> str:
    return "\n".join(f"def func_{seed}_{i}(x):  return x * {i} + {seed}  # line {i}"
                     for i in range(lines))


def step(engine: ContextEngine, n: int, kind: str, body: str, meta: dict | None = None,
         prepare: bool = True) -> list[object]:
    """One model call (optionally prepared), one tool call and its result, the batch gate."""
    events: list[object] = list(engine.prepare(n).events) if prepare else []
    if kind == "file":
        call = ToolCall(f"c{n}", "read_file", {"file_path": f"src/f{n}.py"})
        meta = meta or {"kind": "file", "path": f"src/f{n}.py", "lines": body.count("\n") + 1}
    else:
        call = ToolCall(f"c{n}", "run_command", {"command": f"make t{n}"})
        meta = meta or {"kind": "command", "exit_code": 0, "command": f"make t{n}"}
    engine.add_assistant(Message("assistant", f"step {n}", tool_calls=(call,)))
    engine.add_tool_result(call, ToolResult(body, meta=meta), read_only=kind == "file")
    return events + engine.after_tool_batch(n)


def wire(messages: Sequence[Message]) -> list[dict[str, object]]:
    return [m.to_dict() for m in messages]


def test_requests_only_grow_between_compactions(tmp_path: Path) -> None:
    """Append-only until a rewrite; the read-only nudge (after five reading batches)
    rides on the newest result, which had not been sent yet."""
    engine = make_engine(tmp_path, 32768)
    engine.add_user("explain src/f1.py")
    previous: list[dict[str, object]] = []
    for n in range(1, 10):
        prepared = engine.prepare(n)
        current = wire(prepared.messages)
        assert current[:len(previous)] == previous, f"request {n} rewrote its prefix"
        assert not prepared.events
        previous = current
        step(engine, n, "file", code_text(20, n), prepare=False)
    carriers = [m for m in engine.messages() if "only read or searched" in m.content]
    assert len(carriers) == 1 and carriers[0].role == "tool" and carriers[0].tool_call_id == "c5"


def test_compaction_keeps_the_prompt_in_the_window_and_valid(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("fix the failing test")
    events: list[object] = []
    for n in range(1, 40):
        prepared = engine.prepare(n)
        assert prepared.estimated_tokens + prepared.max_output_tokens <= 8192
        assert_valid_chat(wire(prepared.messages[1:]))
        events += step(engine, n, "file", code_text(50, n), prepare=False)
    compactions = [e for e in events if isinstance(e, Compacted)]
    assert compactions and compactions[0].level == 1
    assert compactions[0].reason == "after tool results"
    assert compactions[0].tokens_after <= engine.budget.target < compactions[0].tokens_before
    assert engine.estimate() <= engine.budget.trigger
    shrunk = [m for m in engine.messages() if "content compacted" in m.content]
    assert shrunk and shrunk[0].content.startswith("[read_file: src/f")


def test_a_rewrite_reports_what_the_server_computes_again(tmp_path: Path) -> None:
    """The figure in the Compacted event is what the next request really makes the
    server compute again: what follows the prefix it shares with the previous request,
    less the messages that are new anyway. The system prompt and the turns before the
    first change are not part of it."""
    engine = make_engine(tmp_path, 16384)
    engine.add_user("read everything")
    checked = 0
    previous = engine.prepare(0).messages
    for n in range(1, 40):
        events = [e for e in step(engine, n, "file", code_text(60, n), prepare=False)
                  if isinstance(e, Compacted)]
        current = engine.prepare(n).messages
        if events:
            shared = next(i for i, (a, b) in enumerate(zip(previous, current, strict=False))
                          if a.to_dict() != b.to_dict())
            # The last message sent may be shrunk now: find it by the call it answers.
            new = next(i for i in range(len(current) - 1, -1, -1)
                       if current[i].tool_call_id == previous[-1].tool_call_id) + 1
            again = sum(COUNTER.message(m) for m in current[shared:new])
            assert sum(e.reprocessed for e in events) == again
            assert shared >= 2 and again < sum(COUNTER.message(m) for m in current[1:])
            checked += 1
        previous = current
    assert checked >= 2
    assert engine.usage().compactions == checked


def test_call_ids_a_server_reuses_do_not_change_the_figures(tmp_path: Path) -> None:
    """Servers that number calls per reply send "call_0" every time: the newest result
    then answers the same id as the last one sent, which must not make the engine take
    it for a message the server has cached (it charged those rewrites 0 tokens)."""
    def session(same_id: bool) -> list[tuple[int, int, int]]:
        engine = make_engine(tmp_path / str(same_id), 16384)
        engine.add_user("read everything")
        found = []
        for n in range(1, 40):
            engine.prepare(n)
            call = ToolCall("call_0" if same_id else f"c{n}", "read_file",
                            {"file_path": f"src/f{n}.py"})
            engine.add_assistant(Message("assistant", f"step {n}", tool_calls=(call,)))
            meta = {"kind": "file", "path": f"src/f{n}.py", "lines": 60}
            engine.add_tool_result(call, ToolResult(code_text(60, n), meta=meta),
                                   read_only=True)
            found += [(e.level, e.tokens_after, e.reprocessed)
                      for e in engine.after_tool_batch(n) if isinstance(e, Compacted)]
        return found

    unique = session(False)
    assert unique and all(reprocessed > 0 for _, _, reprocessed in unique)
    assert session(True) == unique


def test_level_two_recaps_with_the_summarizer_and_keeps_requests(tmp_path: Path) -> None:
    seen: list[str] = []

    def summarize(instructions: str, messages: Sequence[Message]) -> str:
        seen.append(instructions)
        assert COUNTER.text(instructions + messages[0].content) < 6964
        return "## Task\nfix bug\n## Decisions\nnone"

    engine = make_engine(tmp_path, summarize=summarize)
    engine.add_user("first request: fix bug in src/app.py")
    for n in range(1, 30):
        if n % 10 == 0:
            engine.add_user(f"also request {n}")
        step(engine, n, "command", f"out {n}\n" + "x" * 900)
    event = engine.compact(2, "/compact --drop", 30)
    assert event is not None and event.level == 2
    assert engine.transcript_path is not None
    shown = engine.transcript_path.relative_to(tmp_path).as_posix()  # as the model reads it
    assert seen and "factual recap" in seen[0] and shown == ".swival/sessions/" + (
        f"{engine.session_id}.jsonl") and shown in seen[0]
    users = [m.content for m in engine.history if m.role == "user"]
    assert any("also request 10" in t for t in users) and any("also request 20" in t for t in users)
    pinned = engine.messages()[1].content
    assert "## Recap of earlier work" in pinned and "fix bug" in pinned
    assert "first request: fix bug in src/app.py" in pinned


def test_recap_falls_back_to_checkpoints_then_one_marker(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, summarize=lambda i, m: None)
    engine.add_user("task")
    for n in range(1, 12):
        step(engine, n, "command", "y" * 500)
    engine.knowledge.add_checkpoint("checkpoint: found the bug in parse()", 1)
    engine.compact(2, "test", 12)
    assert "checkpoint: found the bug in parse()" in engine.messages()[1].content
    plain = make_engine(tmp_path / "plain")
    plain.add_user("task")
    for n in range(1, 30):
        step(plain, n, "command", "y" * 500 + f" {n}", prepare=False)
    plain.compact(2, "test", 30)
    for _ in range(3):  # deeper, one level per overflow, until nothing is left
        try:
            plain.on_overflow(ContextOverflowError("again"), 31)
        except ContextExhausted:
            break
    markers = [m for m in plain.messages()[1].content.split("\n")
               if "earlier messages were removed" in m]
    assert len(markers) == 1, "markers merge into one count"


def test_nothing_fits_raises_context_exhausted(tmp_path: Path) -> None:
    engine = ContextEngine(ContextSettings(window=1024), "rules " * 900, [])
    engine.add_user("hello")
    with pytest.raises(ContextExhausted, match="larger context window"):
        engine.prepare(1)


def test_overflow_recalibrates_and_compacts_deeper(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("task")
    for n in range(1, 6):
        step(engine, n, "file", code_text(30, n))
    prepared = engine.prepare(6)
    events = engine.on_overflow(
        ContextOverflowError("too long", prompt_tokens=9000, window=8192), 6)
    assert events and engine.calibration.factor > 1.0
    assert COUNTER.messages(engine.prepare(6).messages) < COUNTER.messages(prepared.messages)
    with pytest.raises(ContextExhausted, match="larger context window"):
        for _ in range(3):  # each overflow goes one level deeper, until none is left
            engine.on_overflow(ContextOverflowError("again"), 6)


def test_the_ledger_survives_the_deepest_compaction(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("THE TASK: make parse() accept empty input")
    for n in range(1, 20):
        meta = {"kind": "command", "exit_code": 2, "command": f"make t{n}",
                "changed": [[f"src/m{n}.py", "modified"]]}
        step(engine, n, "command", f"TypeError: oops {n}\n" + "q" * 300, meta, prepare=False)
    levels = []
    while not levels or levels[-1] < 3:
        levels += [e.level for e in engine.on_overflow(ContextOverflowError("full"), 20)]
    # Without a summarizer no recap can be written: the emergency drop keeps the last turn.
    assert levels[-1] == 4 and len(engine.history) == 2
    pinned = engine.messages()[1].content
    assert "THE TASK: make parse() accept empty input" in pinned
    assert "src/m19.py (modified)" in pinned and "TypeError: oops 19" in pinned
    assert_valid_chat(wire(engine.messages()[1:]))


def test_pinned_block_does_not_repeat_a_request_still_shown(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, summarize=lambda instructions, messages: "A recap.")
    engine.add_user("THE TASK: make parse() accept empty input")
    for n in range(1, 25):
        step(engine, n, "command", f"out {n}\n" + "v" * 250, prepare=False)
    engine.compact(2, "test", 25)
    head = engine.messages()[1]  # the pinned block, folded into the first user message
    assert head.role == "user" and head.content.count("THE TASK") == 1
    assert "(still in the conversation)" in head.content


def test_shrunk_failure_keeps_its_error_line(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, 16384)
    engine.add_user("fix the tests")
    failing = ("collected 9 items\n" + "progress line\n" * 40
               + "E   AssertionError: 3 != 4\n" + "more output\n" * 40 + "1 failed, 8 passed\n")
    step(engine, 1, "command", failing, {"kind": "command", "exit_code": 1, "command": "pytest"})
    for n in range(2, 60):
        step(engine, n, "command", "ok\n" + "w" * 900)
        if "characters compacted" in engine.history[2].content:
            break
    assert "E   AssertionError: 3 != 4" in engine.history[2].content


def test_big_result_is_capped_and_spilled(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("run the tests")
    call = ToolCall("c1", "run_command", {"command": "pytest"})
    engine.add_assistant(Message("assistant", tool_calls=(call,)))
    body = "START\n" + "\n".join(f"test_{i} PASSED" for i in range(5000)) + "\nEND 3 failed"
    seen = engine.add_tool_result(call, ToolResult(body, meta={"kind": "command",
                                                               "exit_code": 1}), read_only=False)
    assert COUNTER.text(seen.content) <= int(engine.budget.input_budget * 0.2)
    assert seen.content.startswith("START") and "END 3 failed" in seen.content
    assert seen.meta["spill_path"] == f".swival/out/{engine.session_id}/run_command-1.txt"
    spilled = tmp_path / seen.meta["spill_path"]  # relative to the project root
    assert spilled.read_text() == body and engine.history[-1].content == seen.content
    cut = seen.meta["context_cut"]
    assert cut["total_chars"] == len(body) and cut["total_lines"] == 5002
    assert 0 < cut["kept_chars"] < len(seen.content) and 2 < cut["kept_lines"] < 5002
    shown = [line for line in seen.content.splitlines()
             if line.startswith(("START", "test_", "END"))]
    assert cut["kept_lines"] == len(shown)  # the head and tail lines the model got
    small = ToolCall("c2", "run_command", {"command": "true"})
    engine.add_assistant(Message("assistant", tool_calls=(small,)))
    whole = engine.add_tool_result(small, ToolResult("ok\n", meta={"kind": "command"}),
                                   read_only=False)
    assert "context_cut" not in whole.meta and "spill_path" not in whole.meta


def test_huge_request_is_capped(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    text = "please review:\n" + code_text(2000)
    sent = engine.add_user(text)
    assert COUNTER.text(engine.history[0].content) <= engine.budget.input_budget // 2
    assert sent.cut is not None and sent.cut.saved is not None
    assert f"saved to {sent.cut.saved}" in engine.history[0].content
    assert (tmp_path / sent.cut.saved).read_text() == text
    engine.prepare(1)


def test_a_pasted_request_cut_for_the_model_is_shown_to_the_person(tmp_path: Path) -> None:
    """A 38 KB paste at 8K: the model gets its head; the person reads how much of it the
    model sees and where the whole text is."""
    from swival.config import Settings
    from swival.events import Notice
    from swival.session import build_session
    from tests.scripted import ScriptedProvider, reply

    provider = ScriptedProvider([reply("Reviewed the start.")], window=8192)
    session = build_session(Settings(project_root=tmp_path, max_output_tokens=1024),
                            provider, interactive=False)
    pasted = "please review this log:\n" + "".join(
        f"2024-05-01 12:00:{i % 60:02d} worker {i} finished job {i * 7} in {i % 13} ms\n"
        for i in range(680))
    assert len(pasted) > 38_000
    events = list(session.agent.run_turn(pasted))
    [warning] = [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]
    spilled = next((tmp_path / ".swival" / "out").glob("*/request-*.txt"))
    shown = spilled.relative_to(tmp_path).as_posix()
    assert warning.startswith("Your request is too long for the context window: the model "
                              "sees its first ")
    kept = int(warning.split("sees its first ")[1].split(" of ")[0].replace(",", ""))
    assert f" of {len(pasted):,} characters ({round(100 * kept / len(pasted))}%, " in warning
    assert warning.endswith(f"the whole text is saved in {shown}.")
    assert spilled.read_text() == pasted
    seen = provider.requests[0].messages[-1].content
    assert seen.startswith("please review this log:") and shown in seen


def test_transcript_records_everything_and_resumes(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("fix src/app.py")
    for n in range(1, 12):
        meta = {"kind": "command", "exit_code": 1, "command": f"make t{n}",
                "changed": [["src/app.py", "modified"]]}
        step(engine, n, "command", f"ValueError: bad {n}\n" + code_text(40, n), meta)
    path = engine.transcript_path
    assert path is not None and path.parent == tmp_path / ".swival" / "sessions"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert {"message", "compacted", "history"} <= {r["type"] for r in records}
    assert sum(1 for r in records if r["type"] == "message") == 1 + 2 * 11
    resumed = make_engine(tmp_path)
    assert resumed.load_transcript(path) == len(engine.history)
    assert wire(resumed.history) == wire(engine.history)
    assert "ValueError: bad 11" in resumed.messages()[1].content  # ledger rebuilt
    assert resumed.session_id == path.stem
    resumed.add_user("next")
    assert json.loads(path.read_text().splitlines()[-1])["message"]["content"] == "next"


def test_think_and_snapshot_restore_through_effects(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("investigate")
    for n in range(1, 4):
        step(engine, n, "file", code_text(40, n))
    think = ToolCall("t", "think", {})
    engine.add_assistant(Message("assistant", tool_calls=(think,)))
    result, events = engine.apply_effect(think, ToolResult("", effect=ThinkEffect("idea")), 4)
    assert result.content.startswith("Step 1") and not events
    engine.add_tool_result(think, result, read_only=True)
    snap = ToolCall("s", "snapshot", {})
    engine.add_assistant(Message("assistant", tool_calls=(snap,)))
    before = engine.estimate()
    effect = SnapshotEffect("restore", summary="parse() lacks a None check")
    result, events = engine.apply_effect(snap, ToolResult("", effect=effect), 5)
    assert not result.is_error and events and events[0].level == 0
    assert events[0].reason == "snapshot restore" and engine.estimate() < before
    engine.add_tool_result(snap, result, read_only=True)
    assert_valid_chat(wire(engine.messages()[1:]))
    assert "parse() lacks a None check" in engine.messages()[1].content


def test_restore_needs_a_summary_and_force_over_changes(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("edit")
    step(engine, 1, "file", code_text(5))
    engine.save("before the edit")
    step(engine, 2, "command", "done")  # not read-only: the scope is dirty
    snap = ToolCall("s", "snapshot", {})
    engine.add_assistant(Message("assistant", tool_calls=(snap,)))
    result, _ = engine.apply_effect(snap, ToolResult("", effect=SnapshotEffect("restore")), 3)
    assert result.is_error and "summary" in result.content
    effect = SnapshotEffect("restore", summary="made t2 and read f1")
    result, events = engine.apply_effect(snap, ToolResult("", effect=effect), 3)
    assert result.is_error and "force=true" in result.content and "run_command" in result.content
    assert not events
    forced = SnapshotEffect("restore", summary="made t2 and read f1", force=True)
    result, events = engine.apply_effect(snap, ToolResult("", effect=forced), 3)
    assert not result.is_error and events


def test_usage_and_clear(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.add_user("hello")
    step(engine, 1, "file", code_text(10))
    usage = engine.usage()
    assert usage.window == 8192 and usage.tool_results > usage.user > 0
    assert usage.used == engine.estimate() and usage.free == usage.input_budget - usage.used
    engine.knowledge.apply(ThinkEffect("a thought"), 1)
    engine.clear()
    assert engine.history == () and engine.usage().tool_results == 0
    assert engine.knowledge.pinned_sections() == []


def test_proactive_summaries_run_in_the_background(tmp_path: Path) -> None:
    """A checkpoint every ten model calls, written while the turns go on; it is stored
    and reported the next time the engine runs."""
    gate, started = threading.Event(), threading.Event()

    def summarize(instructions: str, messages: Sequence[Message]) -> str:
        started.set()
        gate.wait(10)
        return "checkpoint recap"

    engine = make_engine(tmp_path, 32768, summarize=summarize, proactive=True)
    engine.add_user("long task")
    events: list[object] = []
    for n in range(1, 10):
        events += step(engine, n, "command", "ok")
    assert not started.is_set()
    events += step(engine, 10, "command", "ok")
    assert started.wait(5), "the tenth call hands the summary to the background"
    for n in range(11, 15):  # the summary is being written: the turns do not wait
        events += step(engine, n, "command", "ok")
    assert not [e for e in events if isinstance(e, Checkpointed)]
    gate.set()
    done: list[Checkpointed] = []
    for _ in range(200):  # until the background has finished (end_turn collects)
        done = [e for e in engine.end_turn(15) if isinstance(e, Checkpointed)]
        if done:
            break
        threading.Event().wait(0.02)
    assert len(done) == 1 and done[0].messages == 21 and done[0].tokens > 0  # 10 turns
    assert "checkpoint recap" in engine.knowledge.checkpoint_text()  # type: ignore[operator]


def _compactions(events: Sequence[object]) -> list[Compacted]:
    return [e for e in events if isinstance(e, Compacted)]


def test_past_the_trigger_compaction_waits_for_a_small_turn(tmp_path: Path) -> None:
    """A rewrite right after a large result makes the server compute that result in a
    prompt it must rebuild anyway; so past the trigger the gate waits (level 1 could
    still do the job) until a small turn, and then rewrites. The large result before
    that turn is shrunk: kept whole, it would be computed again behind the rewrite."""
    engine = make_engine(tmp_path, 16384)
    engine.add_user("read everything")
    n = 0
    while engine.estimate() < engine.budget.trigger:  # large reads, up to the trigger
        n += 1
        assert not _compactions(step(engine, n, "file", code_text(60, n)))
    assert engine.budget.trigger <= engine.estimate() < engine.budget.input_budget
    n += 1
    [done] = _compactions(step(engine, n, "command", "2 passed\n"))  # a small turn
    assert done.level == 1 and done.tokens_after <= engine.budget.target
    assert done.reprocessed <= 0.05 * engine.budget.input_budget
    big, small = engine.history[-3], engine.history[-1]
    assert big.content == f"[read_file: src/f{n - 1}.py, 60 lines — content compacted]"
    assert small.content == "2 passed\n"


def test_the_prompt_never_passes_the_input_budget(tmp_path: Path) -> None:
    """With no small turn to wait for, a rewrite level 1 can make comes when the next
    request would pass the input budget: every request fits it, with room for the
    reply."""
    engine = make_engine(tmp_path, 8192)
    engine.add_user("read everything")
    events: list[object] = []
    for n in range(1, 40):
        prepared = engine.prepare(n)
        assert prepared.estimated_tokens <= engine.budget.input_budget
        assert prepared.estimated_tokens + prepared.max_output_tokens <= 8192
        events += step(engine, n, "file", code_text(50, n), prepare=False)
    done = _compactions(events)
    shrinks = [e for e in done if e.level == 1]
    assert len(shrinks) >= 3 and all(e.tokens_before >= engine.budget.trigger for e in shrinks)
    assert any(e.tokens_before > engine.budget.input_budget for e in shrinks)  # at the last


def test_a_small_turn_before_the_newest_stays_whole(tmp_path: Path) -> None:
    """The turn before the newest is kept whole when it is small: the model has just
    seen it, and it costs little behind a rewrite. Here a result at the cap pushes the
    prompt past the input budget right after a small turn (the small turn itself would
    compact early: that is switched off to reach this case)."""
    engine = make_engine(tmp_path, 16384)
    engine.gate.policy = Policy(ahead=0)
    engine.add_user("read everything")
    n = 0
    while engine.estimate() + 1500 < engine.budget.trigger:
        n += 1
        step(engine, n, "file", code_text(60, n))
    n += 1  # one more read, to land just under the trigger
    step(engine, n, "file", code_text((engine.budget.trigger - 500 - engine.estimate()) // 23, n))
    assert engine.budget.trigger - 800 < engine.estimate() < engine.budget.trigger - 250
    assert not _compactions(step(engine, n + 1, "command", "ok line\n" * 100))
    [done] = _compactions(step(engine, n + 2, "file", code_text(400, n + 2)))
    assert done.level == 1 and done.tokens_before > engine.budget.input_budget
    assert engine.history[-3].content == "ok line\n" * 100  # the small turn, whole
    assert engine.history[-1].content.startswith("def func_")  # the newest, as capped
    assert engine.history[-5].content.startswith(f"[read_file: src/f{n}.py, ")


def test_a_small_turn_past_80_percent_compacts_before_the_trigger(tmp_path: Path) -> None:
    """Between 80 % of the input budget and the trigger, a small turn is the moment to
    compact, down to the target, so the next large result does not force a rewrite
    right behind itself; below 80 % nothing is rewritten."""
    engine = make_engine(tmp_path, 16384)
    engine.add_user("read everything")
    n, events = 0, []
    while engine.estimate() + 1500 < engine.budget.trigger:
        n += 1
        events += step(engine, n, "file", code_text(60, n))
    assert not _compactions(events)
    assert engine.estimate() < 0.8 * engine.budget.input_budget
    [done] = _compactions(step(engine, n + 1, "command", "ok line\n" * 100))
    assert done.level == 1
    assert 0.8 * engine.budget.input_budget < done.tokens_before < engine.budget.trigger
    assert done.tokens_after <= engine.budget.target
    assert engine.history[-1].content == "ok line\n" * 100
