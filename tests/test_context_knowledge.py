"""Knowledge: think steps and digest, the todo list and todo.md, reminders, the
read-only nudge, snapshot summaries, checkpoints, and the pinned sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from swival.context import knowledge as kn
from swival.context.knowledge import Knowledge
from swival.effects import ThinkEffect, TodoEffect


def think(k: Knowledge, text: str, turn: int = 1, **kw: object) -> str:
    result = k.apply(ThinkEffect(text, **kw), turn)  # type: ignore[arg-type]
    return result.content


def todo(k: Knowledge, action: str, turn: int = 1, text: str | None = None,
         id: int | None = None) -> tuple[str, bool]:
    result = k.apply(TodoEffect(action, text, id), turn)
    return result.content, result.is_error


# ----- think -----------------------------------------------------------------------------

def test_think_numbers_steps_automatically_and_explicitly() -> None:
    k = Knowledge(None)
    assert think(k, "read the parser") == "Step 1 noted."
    assert think(k, "parser lacks a None check") == "Step 2 noted."
    assert think(k, "jump ahead", thought_number=5) == "Step 5 noted."
    assert think(k, "after five") == "Step 6 noted."
    assert sorted(k.think.steps) == [1, 2, 5, 6]


def test_revision_replaces_text_and_is_marked() -> None:
    k = Knowledge(None)
    think(k, "the bug is in the lexer")
    think(k, "check tests")
    assert think(k, "the bug is in the parser", revises=1) == "Step 1 revised."
    digest = k.think.digest()
    assert "1. (revised) the bug is in the parser" in digest
    assert "lexer" not in digest
    assert len(k.think.steps) == 2


def test_revising_a_missing_step_is_an_error() -> None:
    k = Knowledge(None)
    think(k, "one")
    result = k.apply(ThinkEffect("x", revises=9), 1)
    assert result.is_error and "no step 9" in result.content and "steps: 1" in result.content


def test_reusing_a_number_replaces_that_step() -> None:
    k = Knowledge(None)
    think(k, "first idea")
    assert think(k, "better idea", thought_number=1) == "Step 1 replaced."
    assert "1. (revised) better idea" in k.think.digest()


def test_branches_are_named_in_the_digest() -> None:
    k = Knowledge(None)
    think(k, "main line")
    assert think(k, "try caching", branch="cache") == "Step 2 noted on branch 'cache'."
    assert "2. [cache] try caching" in k.think.digest()


def test_digest_is_bounded_and_keeps_the_latest_steps() -> None:
    k = Knowledge(None)
    for n in range(1, 61):
        think(k, f"step number {n} " + "detail " * 30)
    digest = k.think.digest()
    assert len(digest) <= kn.DIGEST_CHARS + 60
    assert "60. step number 60" in digest
    assert "1. step number 1 " not in digest
    assert digest.splitlines()[0].startswith("(")
    assert "earlier steps omitted" in digest


def test_one_huge_step_is_cut_in_the_digest() -> None:
    k = Knowledge(None)
    think(k, "z" * 3000)
    assert len(k.think.digest()) <= kn.STEP_CHARS + 10


def test_step_store_is_bounded() -> None:
    k = Knowledge(None)
    for n in range(kn.MAX_STEPS + 20):
        think(k, f"s{n}")
    assert len(k.think.steps) == kn.MAX_STEPS
    assert min(k.think.steps) == 21


# ----- todo ------------------------------------------------------------------------------

def test_todo_add_done_remove_list_clear() -> None:
    k = Knowledge(None)
    assert todo(k, "add", text="write parser") == ("Added #1. 1 open.", False)
    assert todo(k, "add", text="write   tests\nfor it") == ("Added #2. 2 open.", False)
    text, err = todo(k, "done", id=1)
    assert not err and text == "Done #1. 1 open. Next: #2 write tests for it"
    listing, _ = todo(k, "list")
    assert listing == "- [x] #1 write parser\n- [ ] #2 write tests for it"
    assert todo(k, "remove", id=1) == ("Removed #1. 1 open.", False)
    assert todo(k, "add", text="docs")[0] == "Added #3. 2 open."
    assert todo(k, "clear")[0] == "Cleared 2 items."
    assert todo(k, "list")[0] == "The todo list is empty."
    assert todo(k, "add", text="again")[0] == "Added #1. 1 open."


def test_todo_ids_stay_stable() -> None:
    k = Knowledge(None)
    for text in ("a", "b", "c"):
        todo(k, "add", text=text)
    todo(k, "remove", id=2)
    todo(k, "add", text="d")
    assert k.todos() == [(1, "a", False), (3, "c", False), (4, "d", False)]


def test_todo_errors_and_idempotence() -> None:
    k = Knowledge(None)
    todo(k, "add", text="a")
    text, err = todo(k, "done", id=7)
    assert err and "no todo #7" in text and "#1" in text
    assert todo(k, "add", text="a") == ("Already on the list as #1.", False)
    todo(k, "done", id=1)
    assert todo(k, "done", id=1)[0].startswith("#1 was already done.")


def test_todo_list_is_bounded() -> None:
    k = Knowledge(None)
    for n in range(kn.MAX_TODOS):
        todo(k, "add", text=f"item {n}")
    text, err = todo(k, "add", text="one too many")
    assert err and "list is full" in text
    todo(k, "done", id=1)
    assert todo(k, "add", text="fits now")[1] is False
    assert len(k.todos()) == kn.MAX_TODOS and k.todos()[0][0] == 2


def test_todo_md_written_atomically_and_reloaded(tmp_path: Path) -> None:
    state = tmp_path / ".swival"
    k = Knowledge(state)
    todo(k, "add", text="fix parser")
    todo(k, "add", text="add tests")
    todo(k, "done", id=1)
    path = state / "todo.md"
    assert path.read_text() == "# Todo\n\n- [x] 1. fix parser\n- [ ] 2. add tests\n"
    assert sorted(p.name for p in state.iterdir()) == ["todo.md"]  # no temp file left

    fresh = Knowledge(state)
    assert fresh.todos() == []  # a new session does not pick up the file by itself
    fresh.reload()
    assert fresh.todos() == [(1, "fix parser", True), (2, "add tests", False)]
    assert todo(fresh, "add", text="docs")[0] == "Added #3. 2 open."


def test_reload_accepts_hand_edited_file(tmp_path: Path) -> None:
    state = tmp_path / ".swival"
    state.mkdir()
    (state / "todo.md").write_text(
        "# Todo\nsome note\n- [ ] 4. keep me\n* [X] done thing\n- [ ] no number\n- [ ] 4. dup\n")
    k = Knowledge(state)
    k.reload()
    assert k.todos() == [(4, "keep me", False), (5, "done thing", True),
                         (6, "no number", False), (7, "dup", False)]


def test_unwritable_todo_md_keeps_the_list_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the directory should be")
    k = Knowledge(blocker)
    text, err = todo(k, "add", text="still here")
    assert not err and "could not write" in text and "kept in memory" in text
    assert k.todos() == [(1, "still here", False)]


def test_clear_resets_everything_and_removes_todo_md(tmp_path: Path) -> None:
    state = tmp_path / ".swival"
    k = Knowledge(state)
    think(k, "x")
    todo(k, "add", text="y")
    k.add_snapshot_summary("s", "summary text", 2)
    k.add_checkpoint("checkpoint text", 3)
    assert (state / "todo.md").exists()
    k.clear()
    assert k.pinned_sections() == []
    assert k.checkpoint_text() is None
    assert not (state / "todo.md").exists()
    assert think(k, "fresh") == "Step 1 noted."


# ----- reminders and nudges --------------------------------------------------------------

def test_todo_reminder_after_three_turns_without_a_look() -> None:
    k = Knowledge(None)
    todo(k, "add", text="fix parser", turn=1)
    assert k.tail_notes(1) == []
    assert k.tail_notes(2) == []
    assert k.tail_notes(3) == []
    notes = k.tail_notes(4)
    assert len(notes) == 1 and "1 open todo item" in notes[0] and "#1 fix parser" in notes[0]
    assert k.tail_notes(4) == []  # delivered once
    assert k.tail_notes(6) == []
    assert len(k.tail_notes(7)) == 1  # next 3-turn gap


@pytest.mark.parametrize("action", ["list", "add", "done", "remove"])
def test_any_todo_action_counts_as_a_look(action: str) -> None:
    k = Knowledge(None)
    todo(k, "add", text="a", turn=1)
    todo(k, "add", text="b", turn=1)
    todo(k, action, turn=3, text="c" if action == "add" else None,
         id=1 if action in ("done", "remove") else None)
    assert k.tail_notes(4) == [] and k.tail_notes(5) == []
    assert len(k.tail_notes(6)) == 1


def test_no_reminder_when_nothing_is_open() -> None:
    k = Knowledge(None)
    todo(k, "add", text="a", turn=1)
    todo(k, "done", id=1, turn=1)
    assert all(k.tail_notes(t) == [] for t in range(2, 12))


def test_reloaded_list_reminds_three_turns_after_resume(tmp_path: Path) -> None:
    k = Knowledge(tmp_path)
    todo(k, "add", text="a", turn=1)
    resumed = Knowledge(tmp_path)
    resumed.reload()
    assert resumed.tail_notes(20) == []
    assert resumed.tail_notes(22) == []
    assert len(resumed.tail_notes(23)) == 1


def test_nudge_after_five_read_only_turns_not_repeated_until_broken() -> None:
    k = Knowledge(None)
    for turn in range(1, 5):
        k.observe_batch(turn, 1, True)
        assert k.tail_notes(turn) == []
    k.observe_batch(5, 2, True)
    notes = k.tail_notes(5)
    assert len(notes) == 1 and "snapshot" in notes[0] and "restore" in notes[0]
    for turn in range(6, 15):
        k.observe_batch(turn, 1, True)
        assert k.tail_notes(turn) == []
    k.observe_batch(15, 2, False)
    assert k.tail_notes(15) == []
    for turn in range(16, 20):
        k.observe_batch(turn, 1, True)
        assert k.tail_notes(turn) == []
    k.observe_batch(20, 1, True)
    assert len(k.tail_notes(20)) == 1


def test_a_write_inside_the_streak_restarts_the_count() -> None:
    k = Knowledge(None)
    for turn in range(1, 5):
        k.observe_batch(turn, 1, True)
    k.observe_batch(5, 1, False)
    for turn in range(6, 10):
        k.observe_batch(turn, 1, True)
        assert k.tail_notes(turn) == []
    k.observe_batch(10, 1, True)
    assert len(k.tail_notes(10)) == 1


def test_restore_ends_the_read_streak() -> None:
    k = Knowledge(None)
    for turn in range(1, 5):
        k.observe_batch(turn, 1, True)
    k.add_snapshot_summary(None, "findings", 5)
    k.observe_batch(5, 1, True)
    assert k.tail_notes(5) == []


def test_empty_batch_changes_nothing() -> None:
    k = Knowledge(None)
    for turn in range(1, 5):
        k.observe_batch(turn, 1, True)
    k.observe_batch(5, 0, False)
    k.observe_batch(6, 1, True)
    assert len(k.tail_notes(6)) == 1


# ----- snapshot summaries and checkpoints ------------------------------------------------

def test_snapshot_summary_is_capped_and_store_bounded() -> None:
    k = Knowledge(None)
    stored = k.add_snapshot_summary("big", "f" * 10_000, 1)
    assert len(stored) <= kn.SUMMARY_CHARS and "chars cut" in stored
    for n in range(6):
        k.add_snapshot_summary(f"s{n}", f"summary {n} " + "g" * 2000, n + 2)
    assert sum(len(s.text) for s in k.summaries) <= kn.SUMMARIES_CHARS
    assert k.summaries[-1].label == "s5"
    section = next(s for s in k.pinned_sections() if s.startswith("## Snapshot summaries"))
    assert "**s5** (turn 7): summary 5" in section and "summary 0" not in section


def test_snapshot_summary_returns_stored_text() -> None:
    k = Knowledge(None)
    assert k.add_snapshot_summary(None, "  root cause: parser.py:142  ", 3) == \
        "root cause: parser.py:142"
    assert "**summary** (turn 3): root cause: parser.py:142" in k.pinned_sections()[0]


def test_checkpoints_consolidate_oldest_half() -> None:
    k = Knowledge(None)
    assert k.needs_consolidation() is None
    for n in range(3):
        k.add_checkpoint(f"cp{n} " + "w" * 2500, turn=10 * (n + 1))
    assert k.needs_consolidation() is None  # ~7,500 chars: ~1,900 tokens, under 2,000
    k.add_checkpoint("cp3 " + "w" * 2500, turn=40)
    oldest = k.needs_consolidation()
    assert oldest is not None and len(oldest) == 2
    assert oldest[0].startswith("cp0") and oldest[1].startswith("cp1")
    k.replace_oldest("merged cp0+cp1", len(oldest))
    assert len(k.checkpoints) == 3
    assert k.checkpoints[0] == (20, "merged cp0+cp1")
    text = k.checkpoint_text()
    assert text is not None and text.startswith("[up to turn 20] merged cp0+cp1")
    assert k.needs_consolidation() is None


def test_checkpoint_edge_cases() -> None:
    k = Knowledge(None)
    k.add_checkpoint("   ", 1)
    assert k.checkpoint_text() is None
    k.add_checkpoint("x" * 20_000, 2)
    assert len(k.checkpoints[0][1]) <= kn.CHECKPOINT_CHARS
    assert k.needs_consolidation() is None  # one capped checkpoint never needs merging
    with pytest.raises(ValueError, match="count must be between 1 and 1"):
        k.replace_oldest("m", 2)


def test_pinned_sections_only_non_empty_in_order() -> None:
    k = Knowledge(None)
    assert k.pinned_sections() == []
    todo(k, "add", text="a")
    todo(k, "done", id=1)
    assert k.pinned_sections() == []  # done items are not "open todos"
    think(k, "t")
    todo(k, "add", text="open one")
    k.add_snapshot_summary("inv", "found it", 2)
    k.add_checkpoint("cp", 10)
    heads = [s.splitlines()[0] for s in k.pinned_sections()]
    assert heads == ["## Your reasoning so far", "## Open todos", "## Snapshot summaries",
                     "## Earlier checkpoints"]
    assert "- [ ] #2 open one" in k.pinned_sections()[1]


def test_pinned_block_stays_small_when_everything_is_full() -> None:
    k = Knowledge(None)
    for n in range(80):
        think(k, f"thought {n} " + "t" * 300)
    for n in range(kn.MAX_TODOS):
        todo(k, "add", text=f"todo {n} " + "d" * 200)
    for n in range(10):
        k.add_snapshot_summary(f"s{n}", "s" * 5000, n)
    for n in range(10):
        k.add_checkpoint("c" * 5000, n)
    total = sum(len(s) for s in k.pinned_sections())
    print("pinned chars when every store is full:", total)
    assert total < 12_500  # ~3,100 tokens: the hard ceiling of this block
    assert "more (todo list shows all)" in k.pinned_sections()[1]
