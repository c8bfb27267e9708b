"""Emergency compaction and focused recaps, through the engine's public calls with the
real knowledge store, ledger and transcript: at 95 % of the input budget, or when the
model writes no recap, old turns are dropped without a model call, keeping the pinned
block, the ledger and the last turn, and saying where the transcript is; /compact's focus
reaches the recap request; a switch of model or of tools rebuilds the budget."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.errors import ContextExhausted
from swival.events import Compacted
from swival.messages import Message, ToolCall, ToolResult
from swival.tools.catalog import default_tools
from swival.tools.registry import ToolRegistry
from tests.e2e import assert_valid_chat

SCHEMAS = ToolRegistry(default_tools()).schemas()
TASK = "THE TASK: make parse() accept empty input"


class Summarizer:
    """Records every recap request; answers with `answer` (None: the model failed)."""

    def __init__(self, answer: str | None = "## Task\nparse() and empty input.") -> None:
        self.answer = answer
        self.asked: list[str] = []

    def __call__(self, instructions: str, messages: Sequence[Message]) -> str | None:
        self.asked.append(instructions)
        return self.answer


def engine_for(tmp_path: Path, summarize: Summarizer, window: int = 8192) -> ContextEngine:
    folder = tmp_path / ".swival"
    return ContextEngine(ContextSettings(window=window, max_output_tokens=1024),
                         "You are a coding agent.", SCHEMAS, storage=Storage(folder),
                         server=ServerAid(summarize))


def turn(engine: ContextEngine, n: int, size: int, calls: int = 1) -> list[object]:
    """One model turn: `calls` tool calls each reading `size` characters, then the gate
    after the batch."""
    batch = tuple(ToolCall(f"c{n}-{k}", "read_file", {"file_path": f"src/f{n}_{k}.py"})
                  for k in range(calls))
    engine.add_assistant(Message("assistant", f"step {n}", tool_calls=batch))
    body = "\n".join(f"x_{n}_{i} = {i}" for i in range(size // 12))
    for call in batch:
        meta = {"kind": "file", "path": call.arguments["file_path"], "lines": size // 12}
        engine.add_tool_result(call, ToolResult(body, meta=meta), read_only=True)
    return list(engine.after_tool_batch(n))


def compactions(events: list[object]) -> list[Compacted]:
    return [e for e in events if isinstance(e, Compacted)]


def test_at_95_percent_the_gate_drops_turns_without_a_model_call(tmp_path: Path) -> None:
    summarizer = Summarizer()
    engine = engine_for(tmp_path, summarizer)
    engine.add_user(TASK)
    events: list[object] = []
    n = 0
    while not compactions(events):  # small results level 1 cannot shrink, then a turn
        n += 1                          # with two at the cap: one big step over 95 %
        share = engine.estimate() / engine.budget.input_budget
        events = turn(engine, n, 250, 1) if share < 0.6 else turn(engine, n, 9000, 2)
    done = compactions(events)
    assert done[0].tokens_before >= 0.95 * engine.budget.input_budget, done
    assert done[-1].level == 4 and done[-1].reason == "emergency"
    assert summarizer.asked == []  # no recap was asked for
    assert done[-1].tokens_after <= engine.budget.target
    assert "too close to the window to ask the model for one" in done[-1].note
    assert "whole conversation stays in" in done[-1].note
    assert f".swival/sessions/{engine.session_id}.jsonl" in done[-1].note
    messages = engine.messages()
    pinned = messages[1].content
    assert TASK in pinned  # the ledger kept the request
    assert f"they are kept in .swival/sessions/{engine.session_id}.jsonl" in pinned
    assert len(engine.history) <= 3 and f"step {n}" in engine.history[0].content
    assert_valid_chat([m.to_dict() for m in messages[1:]])


def test_below_95_percent_level_two_asks_for_a_recap(tmp_path: Path) -> None:
    summarizer = Summarizer()
    engine = engine_for(tmp_path, summarizer)
    engine.add_user(TASK)
    events: list[object] = []
    n = 0
    while not compactions(events):  # results level 1 cannot shrink: the trigger fires
        n += 1                      # and level 2 must drop turns
        events = turn(engine, n, 250)
    done = compactions(events)
    assert done[0].tokens_before < 0.95 * engine.budget.input_budget
    assert [e.level for e in done][-1] == 2 and done[-1].tokens_after <= engine.budget.target
    assert summarizer.asked, "level 2 asked for a recap"


def test_a_failed_recap_falls_to_the_emergency_drop(tmp_path: Path) -> None:
    summarizer = Summarizer(answer=None)
    engine = engine_for(tmp_path, summarizer)
    engine.add_user(TASK)
    for n in range(1, 12):
        turn(engine, n, 1200)
    event = engine.compact(2, "/compact --drop", 0)
    assert summarizer.asked and event is not None
    assert (event.level, event.reason) == (4, "emergency")
    # a model call was made and failed: the person is told so, not "no model call"
    assert "the model was asked for one and wrote none" in event.note
    assert TASK in engine.messages()[1].content
    assert_valid_chat([m.to_dict() for m in engine.messages()[1:]])


def test_the_emergency_drop_always_fits_even_with_one_huge_turn(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, Summarizer(answer=None), window=4096)
    engine.add_user(TASK)
    call = ToolCall("big", "write_file", {"file_path": "x.py", "content": "y = 1\n" * 2000})
    engine.add_assistant(Message("assistant", "writing", tool_calls=(call,)))
    engine.add_tool_result(call, ToolResult("Wrote x.py.", meta={"kind": "write"}),
                           read_only=False)
    prepared = engine.prepare(1)  # the gate: the call's arguments alone overflow
    assert [e.reason for e in prepared.events][-1] == "emergency"
    assert prepared.estimated_tokens <= engine.budget.input_budget
    assert_valid_chat([m.to_dict() for m in prepared.messages[1:]])


def test_focus_guides_the_recap_and_the_ledger_stays(tmp_path: Path) -> None:
    summarizer = Summarizer()
    engine = engine_for(tmp_path, summarizer)
    engine.add_user(TASK)
    for n in range(1, 12):
        turn(engine, n, 600)
    event = engine.compact(2, "/compact (focused)", 0, "what we learned about the parser")
    assert event is not None and event.level == 2
    assert "a focus: what we learned about the parser\n" in summarizer.asked[-1]
    pinned = engine.messages()[1].content
    assert "## Task\nparse() and empty input." in pinned
    assert TASK in pinned or TASK in [m.content for m in engine.history]


def test_a_smaller_window_rebuilds_the_budget_and_compacts_at_once(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, Summarizer(), window=16384)
    engine.add_user(TASK)
    for n in range(1, 8):
        turn(engine, n, 1800)
    before = engine.estimate()
    assert before < engine.budget.trigger
    events = engine.use_model(4096, Summarizer(), 8)
    assert engine.budget.window == 4096 and engine.settings.window == 4096
    assert events and engine.estimate() <= engine.budget.target
    assert engine.use_model(4096, Summarizer(), 8) == []  # fits now: nothing more


def test_fewer_tools_cost_fewer_tokens(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, Summarizer())
    engine.add_user(TASK)
    full = engine.usage().tools
    engine.set_tool_schemas(ToolRegistry(default_tools(), read_only=True).schemas())
    fewer = engine.usage().tools
    engine.set_tool_schemas(SCHEMAS)
    assert fewer < full and engine.usage().tools == full


def test_only_a_changed_tool_list_counts_as_reprocessing(tmp_path: Path) -> None:
    """The schemas come first in the prompt: a new list makes the server read the whole
    prompt again, the same list (an MCP server restarted with the same tools) nothing."""
    engine = engine_for(tmp_path, Summarizer())
    engine.add_user(TASK)
    engine.prepare(1)
    same = [dict(schema) for schema in SCHEMAS]  # equal, not the same objects
    assert engine.set_tool_schemas(same) == 0 and engine.usage().reprocessed == 0
    fewer = ToolRegistry(default_tools(), read_only=True).schemas()
    again = engine.set_tool_schemas(fewer)
    assert again == engine.estimate() > 0 and engine.usage().reprocessed == again
    assert engine.set_tool_schemas(list(fewer)) == 0 and engine.usage().reprocessed == again


def test_a_failed_recap_on_the_gate_path_falls_to_the_emergency_drop(tmp_path: Path) -> None:
    summarizer = Summarizer(answer=None)
    engine = engine_for(tmp_path, summarizer)
    engine.add_user(TASK)
    events: list[object] = []
    n = 0
    while not compactions(events):  # results level 1 cannot shrink, below 95 %
        n += 1
        events = turn(engine, n, 250)
    done = compactions(events)
    assert done[0].tokens_before < 0.95 * engine.budget.input_budget
    assert summarizer.asked and done[-1].reason == "emergency"
    assert "the model was asked for one and wrote none" in done[-1].note
    assert done[-1].tokens_after <= engine.budget.target


def test_when_level_three_does_not_fit_the_emergency_drop_follows(tmp_path: Path) -> None:
    from swival.errors import ContextOverflowError

    summarizer = Summarizer()
    engine = engine_for(tmp_path, summarizer, window=4096)
    engine.add_user(TASK)
    for n in range(1, 8):
        turn(engine, n, 1200)
    sent = engine.prepare(8)  # the server counts three times what we do
    events = engine.on_overflow(
        ContextOverflowError("too long", prompt_tokens=3 * sent.estimated_tokens), 8)
    levels = [(e.level, e.reason) for e in events]
    assert (3, "server reported overflow") in levels and levels[-1] == (4, "emergency")
    assert "left the prompt over the window" in events[-1].note
    assert summarizer.asked  # levels 2 and 3 still asked for their recap
    assert len(engine.history) <= 2 and TASK in engine.messages()[1].content


def test_another_model_counts_from_our_own_figure_again(tmp_path: Path) -> None:
    from swival.messages import Usage

    engine = engine_for(tmp_path, Summarizer())
    engine.add_user(TASK)
    turn(engine, 1, 1200)
    sent = engine.prepare(2)
    for _ in range(8):  # this server counts 40 % more than we do
        engine.record_usage(Usage(int(sent.estimated_tokens * 1.4), 5), sent)
        sent = engine.prepare(2)
    learned = engine.estimate()
    engine.use_model(8192, Summarizer(), 3)
    assert engine.estimate() < learned / 1.25  # its tokenizer is another


def test_the_emergency_note_says_what_was_dropped_and_the_request_cut(
        tmp_path: Path) -> None:
    """The person is told what went: the request among the dropped turns, and how much
    of it the model still sees (the ledger keeps a request's head, and nothing attached
    to it)."""
    engine = engine_for(tmp_path, Summarizer(answer=None), window=8192)
    request = "THE TASK: " + "make parse() accept empty input; " * 60  # ~2,000 characters
    engine.add_user(request)
    events: list[object] = []
    n = 0
    while not compactions(events):
        n += 1
        events = turn(engine, n, 250, 1) if n < 3 else turn(engine, n, 9000, 2)
    note = compactions(events)[-1].note
    assert re.match(r"\d+ older turns were dropped (and the current turn's tool results "
                    r"were cut down )?without a recap: ", note), note
    assert (f"Your request was shortened: the model now sees only its first 1,200 of "
            f"{len(request.strip()):,} characters, in the notes Swival keeps at the top of the "
            f"conversation") in note
    assert not re.search("ledger|harness|pinned", note), note  # a person's words
    assert "whole conversation stays in .swival/sessions/" in note
    short = engine_for(tmp_path / "short", Summarizer(answer=None), window=8192)
    short.add_user(TASK)
    events, n = [], 0
    while not compactions(events):
        n += 1
        events = turn(short, n, 250, 1) if n < 3 else turn(short, n, 9000, 2)
    assert "Your request left the conversation: the model still sees it whole in the " \
           "notes Swival keeps at the top of the conversation" in compactions(events)[-1].note


def test_when_only_the_current_turn_is_cut_the_note_says_so(tmp_path: Path) -> None:
    """A conversation that is only the newest turn (what a previous emergency drop
    leaves) has no older turns to drop: its results are cut down, and the note says
    that, not that older turns went."""
    engine = engine_for(tmp_path, Summarizer(answer=None), window=8192)
    done = compactions(turn(engine, 1, 9000, 5))
    assert done and done[-1].reason == "emergency"
    note = done[-1].note
    assert note.startswith("The current turn's tool results were cut down to fit the window "
                           "(nothing older was left to drop).")
    assert "older turn" not in note and "Your request" not in note
    assert done[-1].tokens_after <= engine.budget.input_budget


def test_a_one_shot_run_is_not_told_to_use_clear(tmp_path: Path) -> None:
    for interactive, advice in ((True, "start over with /clear"),
                                (False, "run again with a smaller request")):
        engine = ContextEngine(ContextSettings(window=1024, interactive=interactive),
                               "rules " * 900, [])
        engine.add_user("hello")
        with pytest.raises(ContextExhausted) as raised:
            engine.prepare(1)
        assert advice in str(raised.value) and "larger context window" in str(raised.value)
        assert ("/clear" in str(raised.value)) is interactive
    from swival.config import Settings
    from swival.session import build_session
    from tests.scripted import ScriptedProvider

    session = build_session(Settings(project_root=tmp_path), ScriptedProvider([]),
                            interactive=False)  # what `swival -p` builds
    assert session.agent.context.settings.interactive is False


def test_exit_5_says_the_reply_has_no_room_when_the_prompt_alone_fits(tmp_path: Path) -> None:
    """A prompt under the window that leaves under 256 tokens for the reply is not sent;
    the message must not read as '1,422 tokens needed' of a 1,700-token window."""
    engine = ContextEngine(ContextSettings(window=1024, interactive=False),
                           "rules " * 760, [])
    engine.add_user("hello")
    with pytest.raises(ContextExhausted) as raised:
        engine.prepare(1)
    said = str(raised.value)
    estimate = engine.estimate()
    assert estimate < 1024, "the prompt alone is under the window"
    room = engine.budget.reply_tokens(estimate)
    assert f"the prompt takes about {estimate} tokens" in said
    assert f"which leaves {room} for the reply, and a reply needs at least 256" in said
