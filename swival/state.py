"""What Swival keeps on disk: the project's `.swival/` directory, the spill files in it,
and the user's index of the sessions Swival recorded.

`.swival/` belongs to the harness. A repository can ship one, so `prepare_state_dir`
refuses a `.swival` (or a `sessions`, `out`, `history` or `undo` in it) that is a
symlink, and a `.swival` that is a file, instead of writing through it; it creates the
directory with mode 0700 and keeps a `.gitignore` holding `*` in it, so `git add -A` never commits
transcripts full of file contents.

Spill files (outputs too large for the window, saved for the model to page through)
live in `.swival/out/<session id>/`. Pruning never touches the current session's
folder, whose files its history may point to, and keeps the newest SPILLS_KEPT files of
other sessions.

The session index lives in the user's state directory, where no repository can put
files: one line per transcript that this user's Swival created, per project, and a seal
per transcript: the size and SHA-256 of exactly what Swival wrote to it, renewed after
every record (SealedFile). Only indexed sessions are resumed or listed, and only while the
transcript is exactly what Swival wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from swival.errors import UsageError
from swival.redaction import Redactor

STATE_DIR = ".swival"
SESSIONS = "sessions"
SPILLS = "out"
HISTORY = "history"  # the REPL's prompt history
UNDO = "undo"  # pre-images of tool edits, for /undo (swival/tools/undo.py)
SPILLS_KEPT = 50  # spill files of earlier sessions kept; older ones are removed
SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
NUMBER = re.compile(r"-(\d+)\.txt$")


# ----- the project's .swival directory ----------------------------------------------------


def _refuse(path: Path) -> None:
    """UsageError when `path` is a symlink, or (for .swival itself) not a directory."""
    if path.is_symlink():
        target = os.readlink(path)
        raise UsageError(
            f"{path} is a symlink (to {target}). Swival keeps transcripts and saved output "
            "there and does not follow a link, which a repository could ship to send them "
            f"elsewhere. Remove the link (rm {path}) and start Swival again.")
    if path.name == STATE_DIR and path.exists() and not path.is_dir():
        raise UsageError(
            f"{path} is a file, but Swival keeps its transcripts and saved output in a "
            f".swival directory there. Move the file away (mv {path} {path}.bak) and start "
            "Swival again.")


def prepare_state_dir(root: Path) -> Path:
    """Check and create `<root>/.swival` (mode 0700, with a `.gitignore` of `*`) and
    return it. Raises UsageError (exit 2) saying how to fix a symlink, a file in the
    way, or a directory that cannot be created."""
    state = root / STATE_DIR
    for path in (state, state / SESSIONS, state / SPILLS, state / HISTORY, state / UNDO):
        _refuse(path)
    ignore = state / ".gitignore"
    try:
        state.mkdir(mode=0o700, exist_ok=True)
        os.chmod(state, 0o700)
        if ignore.is_symlink() or not ignore.is_file() or ignore.read_text() != "*\n":
            tmp = state / ".gitignore.tmp"
            tmp.unlink(missing_ok=True)
            tmp.write_text("*\n", encoding="utf-8")
            os.replace(tmp, ignore)
    except OSError as exc:
        raise UsageError(
            f"Swival keeps its state in {state} and could not set it up: "
            f"{exc.strerror or exc}. Run Swival in a directory you can write to.") from None
    return state


def sessions_dir(root: Path) -> Path:
    return root / STATE_DIR / SESSIONS


def undo_folder(state_dir: Path, session_id: str) -> Path:
    """Where one session's undo record goes: `<state_dir>/undo/<session_id>`."""
    return state_dir / UNDO / (SAFE_NAME.sub("_", session_id) or "session")


def spill_folder(state_dir: Path, session_id: str) -> Path:
    """Where one session's spill files go: `<state_dir>/out/<session_id>`."""
    return state_dir / SPILLS / (SAFE_NAME.sub("_", session_id) or "session")


# ----- spill files --------------------------------------------------------------------------


def _create(folder: Path, stem: str) -> tuple[Path, BinaryIO]:
    """A new file `<stem>-<n>.txt` in `folder` (created on demand), opened exclusively:
    an existing name, or a symlink planted under it, is never written through."""
    folder.mkdir(parents=True, exist_ok=True)
    if folder.is_symlink():
        raise OSError(f"{folder} is a symlink")
    base = SAFE_NAME.sub("_", stem)[:60] or "result"
    start = len(os.listdir(folder)) + 1
    for n in range(start, start + 10_000):
        path = folder / f"{base}-{n}.txt"
        try:
            return path, path.open("xb")
        except FileExistsError:
            continue
    raise OSError(f"too many spill files in {folder}")


def spill_stream(f: BinaryIO, folder: Path, stem: str, redactor: Redactor) -> Path:
    """Copy an open binary file (from its start), redacted, to a new spill file in
    `folder` and return its path. Raises OSError (e.g. disk full); a partial copy is
    removed. Older spill files of other sessions are pruned."""
    path, out = _create(folder, stem)
    with out:
        try:
            f.seek(0)
            redactor.copy(f, out)
        except OSError:
            path.unlink(missing_ok=True)
            raise
    prune_spills(folder)
    return path


def spill_text(text: str, folder: Path, stem: str) -> Path:
    """Write `text` (already redacted) to a new spill file in `folder`; as spill_stream."""
    path, out = _create(folder, stem)
    with out:
        try:
            out.write(text.encode("utf-8", errors="replace"))
        except OSError:
            path.unlink(missing_ok=True)
            raise
    prune_spills(folder)
    return path


def prune_spills(folder: Path, keep: int = SPILLS_KEPT) -> None:
    """Remove all but the newest `keep` spill files outside `folder` (other sessions'
    folders and loose files next to them). `folder`, the current session's, is never
    touched. Symlinks are removed, never followed."""
    out = folder.parent
    found: list[tuple[int, int, str]] = []
    with contextlib.suppress(OSError), os.scandir(out) as entries:
        for entry in entries:
            if entry.name == folder.name:
                continue
            if entry.is_dir(follow_symlinks=False):
                with os.scandir(entry.path) as inner:
                    found += [_age(e) for e in inner if not e.is_dir(follow_symlinks=False)]
            else:
                found.append(_age(entry))
    found.sort()
    for *_, old in found[:max(0, len(found) - keep)]:
        with contextlib.suppress(OSError):
            os.unlink(old)
    with contextlib.suppress(OSError), os.scandir(out) as entries:
        for entry in entries:
            if entry.name != folder.name and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)  # only when emptied


def _age(entry: os.DirEntry[str]) -> tuple[int, int, str]:
    """Sort key, oldest first: modification time, then the file's number (files made
    within one clock tick share a time)."""
    number = NUMBER.search(entry.name)
    return (entry.stat(follow_symlinks=False).st_mtime_ns,
            int(number.group(1)) if number else 0, entry.path)


# ----- the session index --------------------------------------------------------------------


class SessionIndex:
    """The sessions this user's Swival recorded, per project, kept under the user's
    state directory (`swival.config.user_state_dir`): one JSON line per session in a
    file named after a hash of the project's path. Appends only, so two Swival
    processes recording at once cannot lose each other's lines."""

    def __init__(self, state_home: Path) -> None:
        self.folder = state_home / "sessions"

    def _file(self, project: Path) -> Path:
        key = hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:32]
        return self.folder / f"{key}.jsonl"

    def record(self, project: Path, session_id: str, parent: str | None = None) -> None:
        """Note that Swival created the transcript of `session_id` in `project`. A
        subagent's transcript names the `parent` session that ran it: it is Swival's,
        never a stranger, but it is not a session to resume or list."""
        if session_id in self.recorded(project):
            return
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        entry = {"session": session_id, "project": str(project.resolve())}
        if parent is not None:
            entry["parent"] = parent
        fd = os.open(self._file(project), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    def _entries(self, project: Path) -> dict[str, str | None]:
        """Recorded id -> its parent session (None for a session), oldest first.
        Unreadable lines are skipped."""
        path, where = self._file(project), str(project.resolve())
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return {}
        found: dict[str, str | None] = {}
        for line in lines:
            with contextlib.suppress(ValueError, AttributeError):
                data = json.loads(line)
                if data.get("project") == where and data.get("session") not in found:
                    found[str(data["session"])] = data.get("parent")
        return found

    def _seal_file(self, project: Path, session_id: str) -> Path:
        name = SAFE_NAME.sub("_", session_id) or "session"
        return self._file(project).with_suffix(".seals") / f"{name}.json"

    def seal(self, project: Path, session_id: str, size: int, digest: str) -> None:
        """Record that Swival wrote `size` bytes whose SHA-256 is `digest` to the
        transcript of `session_id` (replaced atomically; readable by the user alone)."""
        path = self._seal_file(project, session_id)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".seal-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"size": size, "sha256": digest}, out)
            os.replace(temp, path)
        except OSError:
            Path(temp).unlink(missing_ok=True)
            raise

    def changed(self, project: Path, session_id: str) -> str | None:
        """Why the transcript of `session_id` may not be resumed, for a person: it is not
        what Swival last wrote there, or Swival has no seal of it. None when intact."""
        try:
            sealed = json.loads(self._seal_file(project, session_id).read_text("utf-8"))
            size, digest = int(sealed["size"]), str(sealed["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return ("Swival has no record of what it wrote there (an older Swival wrote it, "
                    "or the run ended before its first record)")
        try:
            data = (sessions_dir(project) / f"{session_id}.jsonl").read_bytes()
        except OSError as exc:
            return f"it cannot be read ({exc.strerror or exc})"
        if len(data) != size:
            return (f"it changed since Swival last wrote it (it holds {len(data)} bytes, "
                    f"Swival wrote {size}); something else rewrote it")
        if hashlib.sha256(data).hexdigest() != digest:
            return ("it changed since Swival last wrote it (same size, other content); "
                    "something else rewrote it")
        return None

    def recorded(self, project: Path) -> list[str]:
        """Ids recorded for `project`, subagents' included, oldest first."""
        return list(self._entries(project))

    def transcripts(self, project: Path, subagents: bool = False) -> list[str]:
        """Recorded sessions of `project` whose transcript is in its sessions folder (a
        regular file, not a symlink), oldest first; subagents' only with `subagents`."""
        folder = sessions_dir(project)
        return [sid for sid, parent in self._entries(project).items()
                if (subagents or parent is None)
                and (path := folder / f"{sid}.jsonl").is_file() and not path.is_symlink()]

    def strangers(self, project: Path) -> int:
        """How many transcript files in `project`'s sessions folder were not recorded."""
        folder, known = sessions_dir(project), set(self.recorded(project))
        return len([p for p in folder.glob("*.jsonl") if p.stem not in known]) if (
            folder.is_dir()) else 0


@dataclass(frozen=True)
class _Book:
    """What a SealedFile wrote: the hash and size of it, and bytes being appended."""

    digest: Any
    size: int
    pending: bytes = b""


class SealedFile:
    """An append-only file (a session transcript) that hashes exactly the bytes it
    appends and passes `(size, sha256)` to `on_seal` after each append. The seal thus
    describes what Swival wrote and nothing else: bytes another process adds or changes,
    even while the session runs, leave the file different from its seal for good.

    The bookkeeping is one immutable value replaced in one step, and an append whose
    bookkeeping an interruption (Ctrl-C, SIGTERM) cut short is taken in by the next
    append, or by `close`, when the file grew by exactly those bytes; a seal cut short is
    renewed then too. Opened without following a symlink; created with mode 0600, never
    through an existing file."""

    def __init__(self, fd: int, on_seal: Callable[[int, str], None] | None) -> None:
        self._fd = fd
        self._on_seal = on_seal
        digest, size = hashlib.sha256(), 0
        while chunk := os.pread(fd, 1 << 16, size):  # what a resumed transcript holds
            digest.update(chunk)
            size += len(chunk)
        self._book = _Book(digest, size)

    @classmethod
    def open(cls, path: Path, *, create: bool,
             on_seal: Callable[[int, str], None] | None = None) -> SealedFile:
        flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        flags |= (os.O_CREAT | os.O_EXCL) if create else 0
        return cls(os.open(path, flags, 0o600), on_seal)

    def append(self, data: bytes) -> None:
        """Append `data` and renew the seal. Raises OSError (disk full ...)."""
        self._settle()
        self._book = _Book(self._book.digest, self._book.size, data)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        self._settle()

    def close(self) -> None:
        if self._fd >= 0:
            self._settle()
            os.close(self._fd)
            self._fd = -1

    def _settle(self) -> None:
        """Take in the pending append if the file holds it, and renew the seal."""
        book = self._book
        size = os.fstat(self._fd).st_size
        if book.pending and size == book.size + len(book.pending):
            digest = book.digest.copy()
            digest.update(book.pending)
            book = self._book = _Book(digest, size)
        elif book.pending and size == book.size:  # the write itself never happened
            book = self._book = _Book(book.digest, size)
        if self._on_seal is not None:
            # A seal that cannot be written only means this session cannot be resumed.
            with contextlib.suppress(OSError):
                self._on_seal(book.size, book.digest.hexdigest())
