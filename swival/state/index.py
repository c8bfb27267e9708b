"""The user's index of the sessions Swival recorded, and the seal of each transcript
(see swival/state/__init__.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swival.state.folder import SAFE_NAME, sessions_dir


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
    append, or by `close`, when the file grew by exactly those bytes; a seal cut short (or
    one that could not be written) is renewed then too. A seal is written only when what
    Swival wrote differs from the last seal written, so each append writes it once.
    Opened without following a symlink; created with mode 0600, never through an existing
    file."""

    def __init__(self, fd: int, on_seal: Callable[[int, str], None] | None) -> None:
        self._fd = fd
        self._on_seal = on_seal
        digest, size = hashlib.sha256(), 0
        while chunk := os.pread(fd, 1 << 16, size):  # what a resumed transcript holds
            digest.update(chunk)
            size += len(chunk)
        self._book = _Book(digest, size)
        # The (size, sha256) last sealed: what the file held when opened needs no new seal
        # (a new file is empty; a resumed one was sealed when it was written).
        self._sealed: tuple[int, str] | None = (size, digest.hexdigest())

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
        state = (book.size, book.digest.hexdigest())
        if self._on_seal is not None and state != self._sealed:
            # A seal that cannot be written only means this session cannot be resumed.
            with contextlib.suppress(OSError):
                self._on_seal(*state)
                self._sealed = state
