"""The harness's own state: `.swival/` checks, spill files and their pruning, the
session index, and transcripts that are never written through a planted file."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from swival.config import Settings, user_state_dir
from swival.context.engine import ContextEngine, ContextSettings, Storage
from swival.context.transcript import Transcript
from swival.errors import UsageError
from swival.messages import Message, ToolCall, ToolResult
from swival.redaction import Redactor
from swival.session import find_transcript
from swival.state import (
    SPILLS_KEPT,
    SessionIndex,
    claim_spills,
    prepare_state_dir,
    prune_spills,
    spill_folder,
    spill_stream,
    spill_text,
    undo_folder,
)
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.registry import ToolRegistry
from tests.evidence import record

KEY = "sk-state-0123456789abcdef"
REDACTOR = Redactor.of({"OPENAI_API_KEY": KEY})


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", name, args), ctx)


# --- .swival itself -------------------------------------------------------------------

def test_state_dir_is_private_and_ignored_by_git(tmp_path: Path) -> None:
    state = prepare_state_dir(tmp_path)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert (state / ".gitignore").read_text() == "*\n"
    (state / ".gitignore").write_text("!*\n")  # a repository's own idea
    os.chmod(state, 0o755)
    prepare_state_dir(tmp_path)
    assert (state / ".gitignore").read_text() == "*\n"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700


@pytest.mark.parametrize("planted", [".swival", ".swival/sessions", ".swival/out",
                                     ".swival/history"])
def test_a_planted_symlink_stops_swival_before_it_writes(tmp_path: Path, planted: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project = tmp_path / "project"
    (project / planted).parent.mkdir(parents=True, exist_ok=True)
    (project / planted).symlink_to(elsewhere)
    with pytest.raises(UsageError) as caught:
        prepare_state_dir(project)
    assert "is a symlink" in str(caught.value) and f"rm {project / planted}" in str(caught.value)
    assert caught.value.exit_code == 2
    assert list(elsewhere.iterdir()) == []


def test_a_file_named_swival_stops_swival(tmp_path: Path) -> None:
    (tmp_path / ".swival").write_text("not a directory")
    with pytest.raises(UsageError, match="is a file"):
        prepare_state_dir(tmp_path)
    assert (tmp_path / ".swival").read_text() == "not a directory"


@pytest.mark.parametrize("kind", ["named pipe", "directory", "socket"])
def test_a_history_that_is_no_regular_file_stops_swival(tmp_path: Path, kind: str) -> None:
    path = tmp_path / ".swival" / "history"
    path.parent.mkdir()
    if kind == "named pipe":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        listening = socket.socket(socket.AF_UNIX)
        listening.bind(str(path))
        listening.close()
    with pytest.raises(UsageError) as caught:
        prepare_state_dir(tmp_path)
    message = str(caught.value)
    assert f"is not a regular file (it is a {kind})" in message
    assert f"mv {path} {path}.bak" in message and caught.value.exit_code == 2


# --- the model's tools and .swival --------------------------------------------------------

@pytest.mark.parametrize("path", [".swival/sessions/20990101-000000-abcd.jsonl",
                                  ".swival/out/session/cmd-1.txt", ".swival/.gitignore",
                                  "door/x.txt"])
def test_tools_never_write_under_swival(tmp_path: Path, path: str) -> None:
    prepare_state_dir(tmp_path)
    (tmp_path / "door").symlink_to(tmp_path / ".swival")
    ctx = ToolContext(root=tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / ".swival").rglob("*"))
    result = call(ctx, "write_file", file_path=path, content="{}")
    edited = call(ctx, "edit_file", file_path=path, old_string="*", new_string="!")
    after = sorted(p.relative_to(tmp_path) for p in (tmp_path / ".swival").rglob("*"))
    for name, answer in (("write_file", result), ("edit_file", edited)):
        record("path escape", f"{name} {path} (Swival's own state)", "in-process",
               escaped=not answer.is_error or after != before)
    assert result.is_error and "Swival's own state" in result.content
    assert edited.is_error
    assert after == before


@pytest.mark.parametrize("path", [".SWIVAL/sessions/x.jsonl", ".Swival/out/s/x.txt",
                                  ".GIT/hooks/pre-commit", "sub/.Git/config",
                                  ".g\u200cit/hooks/pre-commit", ".swival./x"])
def test_protected_names_are_compared_as_macos_and_windows_do(tmp_path: Path, path: str) -> None:
    """On a case-insensitive file system `.SWIVAL` is `.swival` (and HFS+ ignores some
    code points, Windows trailing dots): refused in every spelling, nothing created."""
    ctx = ToolContext(root=tmp_path)
    result = call(ctx, "write_file", file_path=path, content="{}")
    created = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    record("path escape", f"write_file {path} (another spelling)", "in-process",
           escaped=not result.is_error or bool(created))
    assert result.is_error and ("Swival's own state" in result.content
                                or ".git directory" in result.content), result.content
    assert created == []


def test_undo_copies_are_unreadable_in_any_case(tmp_path: Path) -> None:
    (tmp_path / ".swival" / "undo" / "s").mkdir(parents=True)
    (tmp_path / ".swival" / "undo" / "s" / "a.bin").write_text("secret")
    for path in (".swival/undo/s/a.bin", ".swival/UNDO/s/a.bin", ".SWIVAL/undo/s/a.bin"):
        result = call(ToolContext(root=tmp_path), "read_file", file_path=path)
        assert result.is_error and "keeps copies of files" in result.content, path


def test_tools_may_read_spill_files(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, session_id="s1")
    spilled = spill_text("line one\nline two\n", ctx.spill_dir, "cmd")
    result = call(ctx, "read_file", file_path=str(spilled.relative_to(tmp_path)), offset=2)
    assert not result.is_error and result.content == "2\tline two"


# --- spill files --------------------------------------------------------------------------

def test_pruning_never_touches_the_current_session(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old = [spill_text(f"old {n}", out / "old-session", "cmd") for n in range(SPILLS_KEPT + 5)]
    mine = [spill_text(f"mine {n}", out / "mine", "cmd") for n in range(SPILLS_KEPT + 20)]
    assert all(p.exists() for p in mine), "a file the session may still point to"
    left = sorted((out / "old-session").iterdir())
    assert len(left) == SPILLS_KEPT and old[0] not in left and old[-1] in left
    newest = spill_text("newer", out / "newest", "cmd")  # now "mine" is an earlier session
    assert not (out / "old-session").exists(), "emptied folders go too"
    assert [p for p in mine if p.exists()] == mine[-SPILLS_KEPT:] and newest.exists()


def test_pruning_leaves_a_running_sessions_folder_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    claim = claim_spills(out / "running")
    theirs = [spill_text(f"running {n}", out / "running", "cmd") for n in range(5)]
    ended = [spill_text(f"ended {n}", out / "ended", "cmd") for n in range(5)]
    spill_text("mine", out / "mine", "cmd")
    prune_spills(out / "mine", keep=0)
    assert all(p.exists() for p in theirs), "another session still points to these"
    assert not any(p.exists() for p in ended) and not (out / "ended").exists()
    claim.release()  # that session ended
    prune_spills(out / "mine", keep=0)
    assert not (out / "running").exists()
    again = claim_spills(out / "running")  # --resume of it holds it again
    assert (out / "running" / ".live").exists()
    again.release()


def test_a_session_in_another_process_is_protected_until_that_process_dies(
        tmp_path: Path) -> None:
    """The hold is a lock of the running process: it lasts while the process runs, and
    ends with it, however it ends (here SIGKILL, which runs no clean-up)."""
    out = tmp_path / "out"
    script = ("import sys, time\nfrom pathlib import Path\n"
              "from swival.state import claim_spills, spill_text\n"
              "claim_spills(Path(sys.argv[1]))\n"
              "spill_text('theirs', Path(sys.argv[1]), 'cmd')\n"
              "print('held', flush=True)\ntime.sleep(60)\n")
    other = subprocess.Popen([sys.executable, "-c", script, str(out / "other")],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        spill_text("mine", out / "mine", "cmd")
        prune_spills(out / "mine", keep=0)
        assert [p.name for p in (out / "other").iterdir() if p.name != ".live"] == [
            "cmd-1.txt"]
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    prune_spills(out / "mine", keep=0)
    assert not (out / "other").exists()


def test_pruning_removes_a_planted_link_but_not_what_it_points_to(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "shipped").symlink_to(precious)
    spill_text("x", out / "s1", "cmd")
    prune_spills(out / "s1", keep=0)
    assert not (out / "shipped").is_symlink() and (precious / "keep.txt").read_text() == "mine"


def test_a_spill_never_writes_through_a_planted_file(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    folder = tmp_path / "out" / "s1"
    folder.mkdir(parents=True)
    (folder / "cmd-2.txt").symlink_to(outside)  # dangling: open() would create it
    path = spill_stream(io.BytesIO(f"key {KEY}\n".encode()), folder, "cmd", REDACTOR)
    assert path.name == "cmd-3.txt" and not outside.exists()
    assert path.read_text() == "key [redacted:OPENAI_API_KEY]\n"


def test_the_context_layer_spills_and_records_redacted(tmp_path: Path) -> None:
    engine = ContextEngine(
        ContextSettings(window=4096), "system", [],
        storage=Storage(tmp_path, redactor=REDACTOR))
    engine.add_user("run it")
    call_ = ToolCall(id="c1", name="run_command", arguments={"command": "env"})
    engine.add_assistant(Message(role="assistant", content=f"say {KEY}", tool_calls=(call_,)))
    body = "\n".join(f"VAR{n}={KEY}" for n in range(3000))
    seen = engine.add_tool_result(call_, ToolResult(body, meta={"kind": "command"}),
                                  read_only=True)
    spilled = tmp_path.parent / seen.meta["spill_path"]  # relative to the project root
    assert spilled.parent == spill_folder(tmp_path, engine.session_id)
    assert KEY not in spilled.read_text() and "VAR2999=[redacted:OPENAI_API_KEY]" in (
        spilled.read_text())
    assert engine.transcript_path is not None
    assert KEY not in engine.transcript_path.read_text()


# --- transcripts and the session index ------------------------------------------------------

def test_a_transcript_is_never_created_through_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    path = tmp_path / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    path.symlink_to(target)
    created: list[Path] = []
    for resume in (False, True):
        with pytest.raises(OSError):
            Transcript(path, REDACTOR, resume=resume, on_create=created.append).clear()
    target.write_text("")
    with pytest.raises(OSError):
        Transcript(path, REDACTOR, resume=True).clear()
    assert target.read_text() == "" and created == []
    fresh = Transcript(tmp_path / "sessions" / "s2.jsonl", REDACTOR, on_create=created.append)
    fresh.message(Message("user", f"my key is {KEY}"))
    fresh.clear()
    assert created == [tmp_path / "sessions" / "s2.jsonl"]
    assert stat.S_IMODE(created[0].stat().st_mode) == 0o600
    assert KEY not in created[0].read_text()


def test_the_index_keeps_projects_apart(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "state")
    index.record(tmp_path / "a", "s1")
    index.record(tmp_path / "b", "s2")
    index.record(tmp_path / "a", "s3")
    index.record(tmp_path / "a", "s1")
    assert index.recorded(tmp_path / "a") == ["s1", "s3"]
    assert index.recorded(tmp_path / "b") == ["s2"]
    assert index.recorded(tmp_path / "c") == []


def _session(root: Path, session_id: str, *, by_swival: bool = False) -> Path:
    """A transcript: written the way Swival writes one (recorded in the index and
    sealed after each record), or `by_swival=False`, as a repository would ship it."""
    path = root / ".swival" / "sessions" / f"{session_id}.jsonl"
    if by_swival:
        index = SessionIndex(user_state_dir(os.environ))
        transcript = Transcript(path, REDACTOR, on_create=lambda p: index.record(root, p.stem),
                                on_seal=lambda p, size, digest: index.seal(
                                    root, p.stem, size, digest))
        transcript.message(Message("user", "hi"))
        transcript.message(Message("assistant", "hello"))
        transcript.close()
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"type": "message", "message": {"role": "user", "content": "hi"}}) + "\n")
    return path


def test_only_recorded_sessions_are_resumed(tmp_path: Path) -> None:
    settings = Settings(project_root=tmp_path)
    _session(tmp_path, "20250101-000000-aaaa", by_swival=True)
    _session(tmp_path, "20990101-000000-ffff")  # newer, but came with the repository
    latest = find_transcript(settings, None, latest=True)
    assert latest is not None and latest.stem == "20250101-000000-aaaa"
    with pytest.raises(UsageError) as caught:
        find_transcript(settings, "20990101-000000-ffff", latest=False)
    assert "was not recorded by Swival for you" in str(caught.value)
    assert "20250101-000000-aaaa" in str(caught.value)


def test_a_project_with_only_foreign_sessions_says_so(tmp_path: Path) -> None:
    _session(tmp_path, "20990101-000000-ffff")
    with pytest.raises(UsageError) as caught:
        find_transcript(Settings(project_root=tmp_path), None, latest=True)
    assert "No session recorded" in str(caught.value)
    assert "1 session file there was not recorded" in str(caught.value)


@pytest.mark.parametrize("rewrite", ["append", "same size", "truncate", "no seal"])
def test_a_transcript_changed_behind_swivals_back_is_not_resumed(
        tmp_path: Path, rewrite: str) -> None:
    settings = Settings(project_root=tmp_path)
    path = _session(tmp_path, "20250101-000000-aaaa", by_swival=True)
    assert find_transcript(settings, None, latest=True) == path
    original = path.read_bytes()
    if rewrite == "append":
        path.write_bytes(original + json.dumps(
            {"type": "message", "message": {"role": "user", "content": "FORGED"}}).encode())
    elif rewrite == "same size":
        path.write_bytes(original.replace(b"hello", b"FORGE"))
    elif rewrite == "truncate":
        path.write_bytes(original[:len(original) // 2])
    else:
        for seal in Path(os.environ["XDG_STATE_HOME"]).rglob("*.seals/*.json"):
            seal.unlink()
    for by_id in (None, "20250101-000000-aaaa"):
        with pytest.raises(UsageError) as caught:
            find_transcript(settings, by_id, latest=by_id is None)
        assert "will not be resumed" in str(caught.value), caught.value
        expected = "no record of what it wrote" if rewrite == "no seal" else (
            "changed since Swival last wrote it")
        assert expected in str(caught.value)
    if rewrite != "no seal":
        path.write_bytes(original)  # put back exactly: resumable again
        assert find_transcript(settings, None, latest=True) == path


def _sealed_transcript(root: Path, index: SessionIndex, *, resume: bool = False,
                       interrupt_once: bool = False) -> Transcript:
    """A transcript sealed in `index`; with `interrupt_once`, the first seal is cut short
    the way Ctrl-C cuts a write to the index."""
    interrupted: list[bool] = []

    def seal(path: Path, size: int, digest: str) -> None:
        if interrupt_once and not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt
        index.seal(root, path.stem, size, digest)

    return Transcript(root / ".swival" / "sessions" / "s1.jsonl", REDACTOR, resume=resume,
                      on_seal=seal)


def test_an_interrupted_seal_is_caught_up_by_the_next_record(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "state")
    transcript = _sealed_transcript(tmp_path, index, interrupt_once=True)
    with pytest.raises(KeyboardInterrupt):
        transcript.message(Message("user", "one"))
    assert "no record" in (index.changed(tmp_path, "s1") or "")
    transcript.message(Message("assistant", "two"))
    transcript.close()
    assert index.changed(tmp_path, "s1") is None
    resumed = _sealed_transcript(tmp_path, index, resume=True)  # --continue appends on
    resumed.message(Message("user", "three"))
    resumed.close()
    assert index.changed(tmp_path, "s1") is None


def test_bytes_another_process_adds_mid_session_are_never_sealed(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "state")
    transcript = _sealed_transcript(tmp_path, index)
    transcript.message(Message("user", "one"))
    path = tmp_path / ".swival" / "sessions" / "s1.jsonl"
    with path.open("a", encoding="utf-8") as other:
        other.write(json.dumps({"type": "message", "message": {
            "role": "user", "content": "FORGED"}}) + "\n")
    transcript.message(Message("assistant", "two"))  # Swival goes on writing ...
    transcript.close()
    assert "changed since Swival last wrote it" in (index.changed(tmp_path, "s1") or "")


def test_each_record_writes_its_seal_once_and_a_failed_seal_is_written_later(
        tmp_path: Path) -> None:
    """The seal is renewed once per record (it used to be written twice, before and after
    the append), and one that could not be written is written by the next record."""
    index = SessionIndex(tmp_path / "state")
    seals: list[int] = []
    failing = [True]

    def seal(path: Path, size: int, digest: str) -> None:
        seals.append(size)
        if failing and failing.pop():
            raise OSError("disk full")
        index.seal(tmp_path, path.stem, size, digest)

    transcript = Transcript(tmp_path / ".swival" / "sessions" / "s1.jsonl", REDACTOR,
                            on_seal=seal)
    transcript.message(Message("user", "one"))  # its seal fails
    assert "no record" in (index.changed(tmp_path, "s1") or "")
    transcript.message(Message("assistant", "two"))
    transcript.message(Message("user", "three"))
    transcript.close()  # nothing new to seal
    path = tmp_path / ".swival" / "sessions" / "s1.jsonl"
    sizes = [len(line) + 1 for line in path.read_bytes().split(b"\n")[:-1]]
    assert seals == [sizes[0], sizes[0], sum(sizes[:2]), sum(sizes)]
    assert index.changed(tmp_path, "s1") is None


def test_a_swival_replaced_by_a_link_mid_session_receives_nothing(tmp_path: Path) -> None:
    """A command checked out a commit whose `.swival` is a link (answered yes, no
    sandbox): spill files and undo records are not written through it."""
    from swival.tools.undo import UndoJournal

    root, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    elsewhere.mkdir()
    root.mkdir()
    state = prepare_state_dir(root)
    (root / "f.txt").write_text("x\n")
    os.rename(state, tmp_path / "old-state")
    state.symlink_to(elsewhere)
    with pytest.raises(OSError, match="behind a symlink"):
        spill_text("big output", spill_folder(state, "s1"), "cmd")
    with pytest.raises(OSError, match="behind a symlink"):
        journal = UndoJournal(undo_folder(state, "s1"))
        journal.begin("edit")
        journal.keep(root / "f.txt", "f.txt")
    record("path escape", "spill and undo writes after .swival became a link", "in-process",
           escaped=any(elsewhere.iterdir()))
    assert not any(elsewhere.iterdir())
