"""SnapshotScope (start, dirty rules, messages) and collapse (valid OpenAI chat after
every collapse)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count

import pytest

from swival.context.snapshot import SnapshotScope, collapse, dirties
from swival.messages import Message, ToolCall

_ids = count(1)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def batch(*names: str, text: str = "") -> list[Message]:
    """An assistant message calling `names`, followed by one result per call."""
    calls = tuple(ToolCall(id=f"call{next(_ids)}", name=n, arguments={}) for n in names)
    results = [Message(role="tool", content=f"{c.name} output", tool_call_id=c.id, name=c.name)
               for c in calls]
    return [Message(role="assistant", content=text, tool_calls=calls), *results]


def inflight(*names: str, answered: int = 0) -> list[Message]:
    """The assistant message being executed now, with its first `answered` results."""
    full = batch(*names)
    return full[: 1 + answered]


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


# ----- dirty rules -----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "read_only", "dirty"),
    [
        ("read_file", True, False),
        ("list_files", True, False),
        ("grep", True, False),
        ("think", True, False),
        ("todo", True, False),
        ("snapshot", True, False),
        ("write_file", False, True),
        ("edit_file", False, True),
        ("run_command", False, True),
        ("run_command", True, True),  # a command can always change the workspace
        ("deploy", False, True),  # an unknown tool that is not read-only
        ("lookup", True, False),  # an unknown read-only tool
    ],
)
def test_dirty_rule_per_tool(name: str, read_only: bool, dirty: bool) -> None:
    assert dirties(name, read_only) is dirty
    scope = SnapshotScope()
    scope.save("x", 0)
    scope.note_tool(name, read_only)
    refusal = scope.restore_check(force=False)
    assert (refusal is not None) is dirty
    if dirty:
        assert name in refusal and "force=true" in refusal  # type: ignore[operator]
    assert scope.restore_check(force=True) is None


def test_save_clears_dirty_and_restored_resets() -> None:
    scope = SnapshotScope()
    scope.note_tool("write_file", False)
    assert scope.restore_check(False) is not None
    scope.save("after write", 4)
    assert scope.restore_check(False) is None
    scope.note_tool("edit_file", False)
    scope.restored(3)
    assert scope.restore_check(False) is None


def test_scope_start_measures_only_the_collapsed_range() -> None:
    """A write in an earlier request does not block restoring this request's reads."""
    history = [user("fix it"), *batch("write_file"), user("now explain x"),
               *batch("read_file"), *batch("grep"), *inflight("snapshot")]
    scope = SnapshotScope()
    for name, ro in (("write_file", False), ("read_file", True), ("grep", True)):
        scope.note_tool(name, ro)
    assert scope.restore_check(False) is not None  # coarse record before measuring
    start = scope.scope_start(history)
    assert start == 4
    assert scope.restore_check(False) is None
    scope.note_tool("read_file", True)  # a newer tool: the measurement is stale
    assert scope.restore_check(False) is not None


def test_scope_start_sees_a_write_inside_the_range() -> None:
    history = [user("go"), *batch("read_file"), *batch("run_command"), *inflight("snapshot")]
    scope = SnapshotScope()
    scope.note_tool("read_file", True)
    scope.note_tool("run_command", False)
    scope.scope_start(history)
    refusal = scope.restore_check(False)
    assert refusal is not None and "run_command in the part to collapse" in refusal


def test_unknown_mutating_tool_learned_from_note_tool() -> None:
    history = [user("go"), *batch("deploy"), *inflight("snapshot")]
    scope = SnapshotScope()
    scope.note_tool("deploy", False)
    scope.scope_start(history)
    assert scope.restore_check(False) is not None


# ----- scope start -----------------------------------------------------------------------

def test_scope_start_without_checkpoint_is_after_last_user_message() -> None:
    history = [user("a"), *batch("read_file"), user("b"), *batch("grep")]
    assert SnapshotScope().scope_start(history) == 4


def test_scope_start_uses_checkpoint_and_skips_results() -> None:
    history = [user("a"), *batch("read_file", "snapshot"), *batch("grep")]
    scope = SnapshotScope()
    scope.save("inv", 3)  # saved mid-batch: index 3 is the snapshot call's result
    assert scope.scope_start(history) == 4


def test_scope_start_after_previous_restore() -> None:
    scope = SnapshotScope()
    history = [user("a"), *batch("read_file"), *batch("grep")]
    scope.restored(3)
    assert scope.scope_start(history) == 3
    later = [*history, user("b"), *batch("read_file")]
    assert scope.scope_start(later) == 6  # a newer user message wins


def test_checkpoint_past_the_end_is_clamped() -> None:
    scope = SnapshotScope()
    scope.save(None, 50)
    history = [user("a"), *batch("read_file")]
    assert scope.scope_start(history) == len(history)


def test_rewritten_drops_indexes_and_says_so() -> None:
    scope = SnapshotScope()
    scope.save("inv", 10)
    scope.rewritten()
    assert "dropped when history was compacted" in scope.status(4)
    history = [user("a"), *batch("read_file")]
    assert scope.scope_start(history) == 1


# ----- messages --------------------------------------------------------------------------

def test_save_cancel_status_messages() -> None:
    scope = SnapshotScope()
    assert "no checkpoint to cancel" in scope.cancel()
    assert scope.status(5).startswith("No checkpoint; restore would collapse everything")
    assert "'auth' saved" in scope.save("auth", 5)
    assert "replaces checkpoint 'auth'" in scope.save(None, 6)
    assert scope.status(9).startswith("Checkpoint (unnamed): 3 messages since it.")
    assert "restore is allowed" in scope.status(9)
    scope.note_tool("edit_file", False)
    assert "Changes since then (edit_file): restore needs force=true" in scope.status(10)
    assert "cancelled" in scope.cancel()
    assert scope.status(10).startswith("No checkpoint")


def test_reset_forgets_everything() -> None:
    scope = SnapshotScope()
    scope.save("x", 3)
    scope.note_tool("write_file", False)
    scope.reset()
    assert scope.restore_check(False) is None
    assert scope.status(0).startswith("No checkpoint")


# ----- collapse --------------------------------------------------------------------------

def test_collapse_keeps_inflight_call_and_stays_valid() -> None:
    head = [user("why does login fail?")]
    reads = [*batch("read_file"), *batch("read_file"), *batch("grep")]
    tail = inflight("read_file", "snapshot", answered=1)
    history = [*head, *reads, *tail]
    assert chat_problem(history) is None
    new = collapse(history, 1, "Root cause: parser.py:142 lacks a None check.")
    assert chat_problem(new) is None
    assert new[0] is head[0]
    assert new[1].role == "assistant" and new[1].tool_calls == tail[0].tool_calls
    assert new[1].content.startswith("[Snapshot summary: 6 earlier messages were collapsed")
    assert "parser.py:142" in new[1].content
    assert new[2] is tail[1]  # the result already given to the first call is kept
    assert len(new) == 3
    snapshot_id = tail[0].tool_calls[1].id
    answered = [*new, Message(role="tool", content="ok", tool_call_id=snapshot_id)]
    assert chat_problem(answered, pending_ok=False) is None


def test_collapse_keeps_the_assistants_own_text() -> None:
    history = [user("q"), *batch("read_file"), *inflight("snapshot")]
    history[-1] = Message(role="assistant", content="Enough reading.",
                          tool_calls=history[-1].tool_calls)
    new = collapse(history, 1, "facts")
    assert new[-1].content.endswith("facts\n\nEnough reading.")


def test_collapse_from_checkpoint_mid_batch() -> None:
    save_batch = batch("snapshot", "read_file")
    history = [user("q"), *save_batch, *batch("grep"), *inflight("snapshot")]
    new = collapse(history, 2, "recap")  # index 2 is a result of the save batch
    assert chat_problem(new) is None
    assert new[:4] == [history[0], *save_batch]
    assert len(new) == 5


def test_collapse_keeps_user_messages_in_range_and_alternation() -> None:
    """A /save between turns puts the checkpoint before the next request."""
    history = [user("first"), Message(role="assistant", content="answer"), user("second"),
               *batch("read_file"), *inflight("snapshot")]
    new = collapse(history, 2, "recap")
    assert chat_problem(new) is None
    assert [m.role for m in new] == ["user", "assistant", "user", "assistant"]
    assert new[2].content == "second"


def test_collapse_folds_users_into_a_preceding_user_message() -> None:
    history = [user("first"), user("second"), *batch("read_file"), *inflight("snapshot")]
    new = collapse(history, 1, "recap")
    assert chat_problem(new) is None
    assert new[0].content == "first\n\nsecond"


def test_collapse_without_inflight_call_appends_recap() -> None:
    history = [user("q"), *batch("read_file"), Message(role="assistant", content="done")]
    new = collapse(history, 1, "what I found")
    assert chat_problem(new, pending_ok=False) is None
    assert [m.role for m in new] == ["user", "assistant"]
    assert "what I found" in new[1].content and not new[1].tool_calls


@pytest.mark.parametrize("start", [0, 1, 2, 3, 4, 5, 6, 7, 8, 99, -3])
def test_collapse_any_start_gives_valid_chat(start: int) -> None:
    history = [user("q"), *batch("read_file", "grep"), *batch("run_command"),
               *inflight("think", "snapshot", answered=1)]
    new = collapse(history, start, "recap")
    assert chat_problem(new) is None
    assert new[-2].tool_calls == history[-2].tool_calls  # in-flight call kept
    assert len(new) <= len(history)


def test_collapse_with_nothing_to_drop_returns_history() -> None:
    history = [user("q"), *inflight("snapshot")]
    assert collapse(history, 1, "recap") == history
    assert collapse(history, 2, "recap") == history


def test_collapse_then_restored_boundary_is_next_start() -> None:
    scope = SnapshotScope()
    history = [user("q"), *batch("read_file"), *batch("grep"), *inflight("snapshot")]
    start = scope.scope_start(history)
    new = collapse(history, start, "recap")
    scope.restored(len(new))
    snapshot_id = new[-1].tool_calls[0].id
    new.append(Message(role="tool", content="collapsed", tool_call_id=snapshot_id))
    new.extend(batch("read_file"))
    assert scope.scope_start(new) == 3
    again = collapse(new + inflight("snapshot"), scope.scope_start(new), "recap 2")
    assert chat_problem(again) is None
    assert again[1].content.startswith("[Snapshot summary")  # the first recap survives


def test_chat_checker_catches_broken_histories() -> None:
    calls = batch("read_file")
    assert chat_problem([user("q"), calls[1]]) == "orphan tool result at 1"
    assert chat_problem([user("q"), calls[0], user("r")]) is not None
    assert chat_problem([user("q"), user("r")]) == "two user messages in a row at 1"
    assert chat_problem([user("q"), calls[0]], pending_ok=False) is not None


def test_coarse_refusal_names_its_span() -> None:
    scope = SnapshotScope()
    scope.note_tool("write_file", False)
    assert "write_file this session" in (scope.restore_check(False) or "")
    scope.restored(5)
    scope.note_tool("edit_file", False)
    assert "edit_file since the last restore" in (scope.restore_check(False) or "")
    scope.save("x", 6)
    scope.note_tool("run_command", False)
    assert "run_command since the checkpoint" in (scope.restore_check(False) or "")
