"""The undo journal, driven through the real write_file and edit_file tools: pre-images
kept per request, byte-for-byte restores, created files removed, repeated undo, refusal
when a file changed on disk since the agent wrote it, and the copies kept private."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from swival.config import Settings
from swival.messages import ToolCall, ToolResult
from swival.redaction import Redactor
from swival.session import build_session
from swival.state import SPILLS, prepare_state_dir, undo_folder
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.registry import ToolRegistry
from swival.tools.undo import KEPT_SESSIONS, UndoJournal, Undone, UndoRefused
from tests.scripted import ScriptedProvider

KEY = "sk-or-v1-undo0123456789abcdef01"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    state = prepare_state_dir(tmp_path)
    return ToolContext(root=tmp_path, undo=UndoJournal(undo_folder(state, "s1")),
                       redactor=Redactor.of({"OPENROUTER_API_KEY": KEY}))


def run(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    result = ToolRegistry(core_tools()).run(ToolCall("c1", name, args), ctx)
    assert not result.is_error, result.content
    return result


def request(ctx: ToolContext, label: str) -> None:
    assert ctx.undo is not None
    ctx.undo.begin(label)


def undo(ctx: ToolContext, force: bool = False) -> Undone | UndoRefused | None:
    assert ctx.undo is not None
    return ctx.undo.undo(force)


def test_a_request_of_edits_writes_and_new_files_is_undone_byte_for_byte(
        ctx: ToolContext) -> None:
    root = ctx.root
    raw = b"line one\r\nline two\r\n\xef\xbb\xbfodd but valid\n"  # CRLF, a BOM mid-file
    (root / "a.txt").write_bytes(raw)
    os.chmod(root / "a.txt", 0o640)
    (root / "b.py").write_text(f"KEY = '{KEY}'\nx = 1\n")
    request(ctx, "change things")
    run(ctx, "read_file", file_path="a.txt")
    run(ctx, "edit_file", file_path="a.txt", old_string="line two", new_string="LINE 2")
    run(ctx, "edit_file", file_path="a.txt", old_string="LINE 2", new_string="line 2!")
    run(ctx, "read_file", file_path="b.py")
    run(ctx, "write_file", file_path="b.py", content="x = 2\n")  # the secret goes too
    run(ctx, "write_file", file_path="new/deep/c.py", content="print()\n")
    assert (root / "a.txt").read_bytes() != raw

    outcome = undo(ctx)
    assert isinstance(outcome, Undone)
    assert outcome.label == "change things"
    assert sorted(outcome.restored) == ["a.txt", "b.py"]
    assert outcome.removed == ("new/deep/c.py",)
    assert (root / "a.txt").read_bytes() == raw  # the pre-image of the first edit
    assert stat.S_IMODE((root / "a.txt").stat().st_mode) == 0o640
    assert (root / "b.py").read_text() == f"KEY = '{KEY}'\nx = 1\n"  # the real secret
    assert not (root / "new").exists()  # the directories the write created went too
    assert undo(ctx) is None  # nothing older


def test_repeated_undo_walks_back_one_request_at_a_time(ctx: ToolContext) -> None:
    path = ctx.root / "v.txt"
    for n in range(1, 4):
        request(ctx, f"version {n}")
        if n > 1:
            run(ctx, "read_file", file_path="v.txt")
        run(ctx, "write_file", file_path="v.txt", content=f"v{n}\n")
    assert path.read_text() == "v3\n"
    seen = []
    for _ in range(3):
        outcome = undo(ctx)
        assert isinstance(outcome, Undone)
        seen.append((outcome.label, outcome.remaining, path.read_text() if path.exists()
                     else None))
    assert seen == [("version 3", 2, "v2\n"), ("version 2", 1, "v1\n"), ("version 1", 0, None)]


def test_a_file_changed_on_disk_since_blocks_undo_unless_forced(ctx: ToolContext) -> None:
    path = ctx.root / "app.py"
    path.write_text("original\n")
    other = ctx.root / "other.py"
    other.write_text("other\n")
    request(ctx, "edit two files")
    run(ctx, "read_file", file_path="app.py")
    run(ctx, "write_file", file_path="app.py", content="by the agent\n")
    run(ctx, "read_file", file_path="other.py")
    run(ctx, "write_file", file_path="other.py", content="agent too\n")
    path.write_text("by the person\n")

    refused = undo(ctx)
    assert isinstance(refused, UndoRefused) and refused.changed == ("app.py",)
    assert path.read_text() == "by the person\n"  # nothing was touched
    assert other.read_text() == "agent too\n"

    forced = undo(ctx, force=True)
    assert isinstance(forced, Undone) and forced.overwritten == ("app.py",)
    assert path.read_text() == "original\n" and other.read_text() == "other\n"


def test_a_deleted_file_counts_as_changed_and_comes_back_with_its_mode(
        ctx: ToolContext) -> None:
    secret = ctx.root / "secret.txt"
    secret.write_text("mine\n")
    os.chmod(secret, 0o600)
    request(ctx, "create and edit")
    run(ctx, "write_file", file_path="made.py", content="x\n")
    run(ctx, "read_file", file_path="secret.txt")
    run(ctx, "write_file", file_path="secret.txt", content="changed\n")
    (ctx.root / "made.py").unlink()
    secret.unlink()
    refused = undo(ctx)
    assert isinstance(refused, UndoRefused)
    assert refused.changed == ("secret.txt",)  # made.py is gone already: nothing to lose
    forced = undo(ctx, force=True)
    assert isinstance(forced, Undone) and forced.restored == ("secret.txt",)
    assert forced.removed == ("made.py",)
    assert secret.read_text() == "mine\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_a_write_that_failed_leaves_nothing_to_undo(ctx: ToolContext) -> None:
    request(ctx, "earlier")
    run(ctx, "write_file", file_path="early.txt", content="e\n")
    request(ctx, "failing")
    (ctx.root / "plain.txt").write_text("a file, not a directory\n")
    failed = ToolRegistry(core_tools()).run(
        ToolCall("c", "write_file", {"file_path": "plain.txt/f.txt", "content": "g"}), ctx)
    assert failed.is_error and "could not write" in failed.content
    outcome = undo(ctx)  # the failed request kept a copy but wrote nothing: skipped
    assert isinstance(outcome, Undone) and outcome.label == "earlier"


def test_a_damaged_record_is_skipped(ctx: ToolContext) -> None:
    request(ctx, "good")
    run(ctx, "write_file", file_path="g.txt", content="g\n")
    request(ctx, "damaged")
    run(ctx, "write_file", file_path="d.txt", content="d\n")
    assert ctx.undo is not None
    newest = sorted(ctx.undo.folder.iterdir())[-1]
    (newest / "manifest.json").write_text("{not json")
    outcome = undo(ctx)
    assert isinstance(outcome, Undone) and outcome.label == "good"


def test_a_refused_write_keeps_nothing_to_undo(ctx: ToolContext) -> None:
    (ctx.root / "p.txt").write_text("p\n")
    request(ctx, "refused")
    ctx.approve_edit = lambda name, diff, new: "no"
    result = ToolRegistry(core_tools()).run(
        ToolCall("c", "write_file", {"file_path": "q.txt", "content": "q"}), ctx)
    assert result.is_error and not (ctx.root / "q.txt").exists()
    assert undo(ctx) is None


def test_the_copies_are_private_and_the_file_tools_cannot_read_them(
        ctx: ToolContext) -> None:
    (ctx.root / "s.env").write_text(f"TOKEN={KEY}\n")
    request(ctx, "edit the env")
    run(ctx, "read_file", file_path="s.env")
    run(ctx, "edit_file", file_path="s.env", old_string="TOKEN", new_string="API_TOKEN")
    folder = ctx.root / ".swival" / "undo"
    files = [p for p in folder.rglob("*") if p.is_file()]
    blobs = [p for p in files if p.suffix == ".bin"]
    assert blobs and KEY.encode() in blobs[0].read_bytes()  # unredacted, to restore it
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in folder.rglob("*")
               if p.is_dir())
    registry = ToolRegistry(core_tools())
    rel = blobs[0].relative_to(ctx.root).as_posix()
    for name, args in (("read_file", {"file_path": rel}),
                       ("list_files", {"path": ".swival/undo"}),
                       ("grep", {"pattern": "TOKEN", "path": ".swival/undo"})):
        result = registry.run(ToolCall("c", name, args), ctx)
        assert result.is_error and "/undo" in result.content, (name, result.content)
    found = registry.run(ToolCall("c", "grep", {"pattern": "sk-or", "path": ".swival"}), ctx)
    assert KEY not in found.content
    manifest = next(p for p in files if p.name == "manifest.json").read_text()
    assert KEY not in manifest


def test_a_resumed_session_can_undo_what_it_did_before(ctx: ToolContext) -> None:
    request(ctx, "before the restart")
    run(ctx, "write_file", file_path="r.txt", content="r\n")
    assert ctx.undo is not None
    again = UndoJournal(ctx.undo.folder)  # a new process, the same session
    assert again.pending() == 1
    outcome = again.undo()
    assert isinstance(outcome, Undone) and outcome.removed == ("r.txt",)


def test_undo_folders_of_old_sessions_are_pruned(tmp_path: Path) -> None:
    state = prepare_state_dir(tmp_path)
    for n in range(5):
        (undo_folder(state, f"old{n}") / "000001").mkdir(parents=True)
        os.utime(undo_folder(state, f"old{n}"), ns=(n * 10**9, n * 10**9))
    current = UndoJournal(undo_folder(state, "now"))
    current.prune(state / SPILLS, keep=2)
    assert sorted(p.name for p in (state / "undo").iterdir()) == ["old3", "old4"]


def test_pruning_leaves_the_record_of_a_session_still_running(tmp_path: Path) -> None:
    """Two real sessions: the second one's start-up pruning skips the first one's undo
    record while the first runs, however old, and removes it once it has ended."""
    settings = Settings(project_root=tmp_path)
    first = build_session(settings, ScriptedProvider([]), interactive=False)
    ctx = first.agent.tool_ctx
    request(ctx, "the first session's edit")
    run(ctx, "write_file", file_path="kept.txt", content="k\n")
    assert ctx.undo is not None
    state = tmp_path / ".swival"
    for n in range(KEPT_SESSIONS + 1):  # newer records of sessions long gone
        (undo_folder(state, f"gone{n}") / "000001").mkdir(parents=True)
        os.utime(undo_folder(state, f"gone{n}"), ns=((n + 10) * 10**9,) * 2)
    os.utime(ctx.undo.folder, ns=(10**9, 10**9))  # the oldest of all
    second = build_session(settings, ScriptedProvider([]), interactive=False)
    assert ctx.undo.folder.is_dir() and not undo_folder(state, "gone0").exists()
    assert undo_folder(state, "gone1").exists()
    outcome = undo(ctx)
    assert isinstance(outcome, Undone) and outcome.removed == ("kept.txt",)
    request(ctx, "another edit")
    run(ctx, "write_file", file_path="later.txt", content="l\n")
    os.utime(ctx.undo.folder, ns=(10**9, 10**9))
    first.close()
    third = build_session(settings, ScriptedProvider([]), interactive=False)
    assert not ctx.undo.folder.exists()  # ended: pruned like any old record
    second.close()
    third.close()


def test_a_long_request_names_its_undo_between_words(ctx: ToolContext) -> None:
    request(ctx, "please rename every helper in the parsing module and then "
                 "update all of the callers accordingly, carefully")
    run(ctx, "write_file", file_path="n.txt", content="n\n")
    outcome = undo(ctx)
    assert isinstance(outcome, Undone)
    assert outcome.label == ("please rename every helper in the parsing module and then "
                             "update all of the…")


def test_a_symlinked_undo_folder_stops_start_up(tmp_path: Path) -> None:
    from swival.errors import UsageError

    prepare_state_dir(tmp_path)
    (tmp_path / ".swival" / "undo").symlink_to(tmp_path)
    with pytest.raises(UsageError, match="symlink"):
        prepare_state_dir(tmp_path)
