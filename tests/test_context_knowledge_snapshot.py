"""The snapshot scope (where a restore starts, what makes it dirty, what the model and
the user are told) and the collapse pass (valid OpenAI chat after every collapse)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count
from pathlib import Path

import pytest

from swival.context import passes, snapshot
from swival.context.engine import ContextEngine, ContextSettings
from swival.context.history import Facts, History
from swival.context.snapshot import Scope
from swival.context.tokens import TokenCounter
from swival.messages import Message, ToolCall, ToolResult

_ids = count(1)
COUNTER = TokenCounter()
READ_ONLY = {"read_file": True, "grep": True, "think": True, "snapshot": True,
             "write_file": False, "run_command": False}


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


def batch(*names: str, text: str = "", answered: int | None = None) -> list[Message]:
    """An assistant message calling `names`, then its results (the first `answered`)."""
    calls = tuple(ToolCall(id=f"call{next(_ids)}", name=n, arguments={}) for n in names)
    results = [Message(role="tool", content=f"{c.name} output", tool_call_id=c.id, name=c.name)
               for c in calls]
    return [Message(role="assistant", content=text, tool_calls=calls),
            *results[:len(results) if answered is None else answered]]


def build(*turns: list[Message]) -> History:
    history = History()
    for turn in turns:
        for message in turn:
            facts = None
            if message.role == "tool":
                facts = Facts(message.name or "", read_only=READ_ONLY.get(message.name or "",
                                                                          False))
            history = history.add(message, facts, COUNTER.message)
    return history


def chat_problem(history: Sequence[Message], pending_ok: bool = True) -> str | None:
    """Why `history` is not valid OpenAI chat, or None. With `pending_ok`, the last
    assistant message's calls may still lack results (the engine answers them next)."""
    open_ids: set[str] = set()
    last_role = "system"
    for i, m in enumerate(history):
        if m.role == "tool":
            if m.tool_call_id not in open_ids:
                return f"orphan tool result at {i}"
            open_ids.discard(m.tool_call_id)
        else:
            if open_ids:
                return f"calls {sorted(open_ids)} unanswered before message {i}"
            if m.role == last_role and m.role in ("user", "assistant") and not m.tool_calls:
                return f"two {m.role} messages in a row at {i}"
            open_ids = {c.id for c in m.tool_calls}
        last_role = m.role
    if open_ids and not pending_ok:
        return f"calls {sorted(open_ids)} unanswered at the end"
    return None


def collapse(history: History, start: int, summary: str, inflight: bool = True) -> History:
    return passes.collapse(history, start, summary, COUNTER.message, inflight)[0]


# ----- the scope ---------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "dirty"), [
    ("read_file", False), ("grep", False), ("think", False), ("snapshot", False),
    ("write_file", True), ("run_command", True), ("deploy", True)])
def test_results_of_tools_not_read_only_make_the_scope_dirty(name: str, dirty: bool) -> None:
    history = build(user("q"), batch(name))
    assert bool(snapshot.changes(history, 1)) is dirty
    assert snapshot.changes(history, 2) == ()


def test_scope_starts_after_the_last_request_or_restore_or_at_the_checkpoint() -> None:
    history = build(user("first"), batch("write_file"), user("second"), batch("read_file"))
    assert Scope().start(history) == 3
    assert Scope(boundary=4).start(history) == 4
    assert Scope(checkpoint=1).start(history) == 1
    assert Scope(checkpoint=99).start(history) == len(history.turns)  # clamped


def test_a_write_before_the_scope_does_not_block_a_restore(tmp_path: Path) -> None:
    engine = ContextEngine(ContextSettings(window=8192), "sys", [])
    engine.add_user("edit, then investigate")
    for n, (name, read_only) in enumerate((("write_file", False), ("read_file", True))):
        call = ToolCall(f"c{n}", name, {})
        engine.add_assistant(Message("assistant", tool_calls=(call,)))
        engine.add_tool_result(call, ToolResult("x" * 400), read_only=read_only)
        if n == 0:
            saved = engine.save("after the edit")
            assert saved == snapshot.Saved("after the edit", replaced=False)
    status = engine.status()
    assert status.checkpoint and status.changes == () and status.messages_since == 2
    assert "restore is allowed" in snapshot.for_model(status)
    again = engine.save("later")
    assert again.replaced and again.previous == "after the edit"
    assert engine.cancel() == snapshot.Cancelled("later", existed=True)
    assert engine.cancel() == snapshot.Cancelled(None, existed=False)
    assert engine.status().changes == ("write_file",)  # without a checkpoint: this request


def test_rewritten_drops_the_checkpoint_and_says_so() -> None:
    scope = Scope(checkpoint=3, label="x", boundary=2).rewritten()
    assert scope == Scope(lost=True)
    status = snapshot.status(scope, build(user("q")))
    assert status.lost and "dropped when history was compacted" in snapshot.for_model(status)


def test_refusals_say_what_to_do() -> None:
    dirty = snapshot.for_model(snapshot.Refused("dirty", ("write_file",), "since the checkpoint"))
    assert "write_file since the checkpoint" in dirty and "force=true" in dirty
    assert "summary" in snapshot.for_model(snapshot.Refused("no summary"))


def test_the_person_reads_outcomes_in_their_own_words() -> None:
    dirty = snapshot.for_person(snapshot.Refused("dirty", ("edit_file",), "in this request"))
    assert dirty == ("not collapsed: edit_file changed things in this request; the model must "
                     "confirm with force")
    assert "force=true" not in dirty
    assert snapshot.for_person(snapshot.Saved("probe", True, "old")) == (
        "checkpoint 'probe' saved, replacing 'old'")
    assert snapshot.for_person(snapshot.Status("x", True, 1, (), False)) == (
        "checkpoint 'x', 1 message since")


# ----- collapse ----------------------------------------------------------------------------

def test_collapse_keeps_the_inflight_call_and_stays_valid() -> None:
    head, tail = user("why does login fail?"), batch("read_file", "snapshot", answered=1)
    history = build(head, batch("read_file"), batch("read_file"), batch("grep"), tail)
    assert chat_problem(history.messages()) is None
    new = collapse(history, 1, "Root cause: parser.py:142 lacks a None check.")
    messages = new.messages()
    assert chat_problem(messages) is None
    assert messages[0] is head[0] and len(messages) == 3
    assert messages[1].tool_calls == tail[0].tool_calls
    assert messages[1].content.startswith("[Snapshot summary: 6 earlier messages were collapsed")
    assert "parser.py:142" in messages[1].content and messages[2] is tail[1]
    snapshot_id = tail[0].tool_calls[1].id
    answered = [*messages, Message(role="tool", content="ok", tool_call_id=snapshot_id)]
    assert chat_problem(answered, pending_ok=False) is None


def test_collapse_keeps_the_assistants_own_text() -> None:
    history = build(user("q"), batch("read_file"), batch("snapshot", text="Enough reading.",
                                                         answered=0))
    assert collapse(history, 1, "facts").messages()[-1].content.endswith(
        "facts\n\nEnough reading.")


def test_collapse_keeps_user_messages_in_range_and_alternation() -> None:
    history = build(user("first"), [Message(role="assistant", content="answer")],
                    user("second"), batch("read_file"), batch("snapshot", answered=0))
    new = collapse(history, 1, "recap").messages()
    assert chat_problem(new) is None
    assert [m.role for m in new] == ["user", "assistant"]
    assert new[0].content == "first\n\nsecond"  # the request inside the scope is kept


def test_collapse_without_inflight_call_appends_the_summary() -> None:
    history = build(user("q"), batch("read_file"), [Message(role="assistant", content="done")])
    new = collapse(history, 1, "what I found", inflight=False).messages()
    assert chat_problem(new, pending_ok=False) is None
    assert [m.role for m in new] == ["user", "assistant"]
    assert "what I found" in new[1].content and not new[1].tool_calls


@pytest.mark.parametrize("start", [0, 1, 2, 3, 4, 99])
def test_collapse_from_any_start_gives_valid_chat(start: int) -> None:
    history = build(user("q"), batch("read_file", "grep"), batch("run_command"),
                    batch("think", "snapshot", answered=1))
    new = collapse(history, start, "recap").messages()
    assert chat_problem(new) is None
    assert new[-2].tool_calls == history.messages()[-2].tool_calls  # in-flight call kept
    assert len(new) <= len(history.messages())


def test_collapse_with_nothing_to_drop_returns_the_history() -> None:
    history = build(user("q"), batch("snapshot", answered=0))
    assert collapse(history, 1, "recap") is history
    assert collapse(history, 2, "recap") is history


def test_chat_checker_catches_broken_histories() -> None:
    calls = batch("read_file")
    assert chat_problem([*user("q"), calls[1]]) == "orphan tool result at 1"
    assert chat_problem([*user("q"), calls[0], *user("r")]) is not None
    assert chat_problem([*user("q"), *user("r")]) == "two user messages in a row at 1"
    assert chat_problem([*user("q"), calls[0]], pending_ok=False) is not None
