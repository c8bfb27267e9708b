"""Spill files: outputs too large for the window, saved under `.swival/out/<session>/`
for the model to page through, and their pruning (see swival/state/__init__.py)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from swival.redaction import Redactor
from swival.state.folder import LIVE, SAFE_NAME, SPILLS

SPILLS_KEPT = 50  # spill files of earlier sessions kept; older ones are removed
NUMBER = re.compile(r"-(\d+)\.txt$")


def _create(folder: Path, stem: str) -> tuple[Path, BinaryIO]:
    """A new file `<stem>-<n>.txt` in `folder` (created on demand), opened exclusively:
    an existing name, or a symlink planted under it, is never written through."""
    # `.swival` itself may have become a link since start-up (a command checked out a
    # commit holding one): never create or write anything through it.
    if any(p.is_symlink() for p in (folder.parent.parent, folder.parent, folder)):
        raise OSError(f"{folder} is behind a symlink")
    folder.mkdir(parents=True, exist_ok=True)
    base = SAFE_NAME.sub("_", stem)[:60] or "result"
    start = len([name for name in os.listdir(folder) if name != LIVE]) + 1
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
    touched, nor the folder of any session still running (see claim_spills): its history
    may point to them too. Symlinks are removed, never followed."""
    out = folder.parent
    found: list[tuple[int, int, str]] = []
    idle: list[str] = []
    with contextlib.suppress(OSError), os.scandir(out) as entries:
        for entry in entries:
            if entry.name == folder.name:
                continue
            if not entry.is_dir(follow_symlinks=False):
                found.append(_age(entry))
                continue
            with unless_live(Path(entry.path)) as free:
                if free:
                    idle.append(entry.path)
                    with os.scandir(entry.path) as inner:
                        found += [_age(e) for e in inner
                                  if e.name != LIVE and not e.is_dir(follow_symlinks=False)]
    found.sort()
    doomed = found[:max(0, len(found) - keep)]
    for holder in {os.path.dirname(path) for *_, path in doomed} | set(idle):
        _prune_folder(Path(holder), {path for *_, path in doomed})


def _prune_folder(holder: Path, doomed: set[str]) -> None:
    """Delete the `doomed` files in `holder` (the spill folder itself, or for loose files
    the folder of all spills) and, if emptied, the folder, unless a session took it
    meanwhile."""
    loose = holder.name == SPILLS
    with unless_live(holder) as free:
        if not (free or loose):
            return
        for path in doomed:
            if os.path.dirname(path) == str(holder):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        if not loose and {p.name for p in holder.iterdir()} <= {LIVE}:
            with contextlib.suppress(OSError):
                (holder / LIVE).unlink(missing_ok=True)
                os.rmdir(holder)


@contextlib.contextmanager
def unless_live(spills: Path) -> Iterator[bool]:
    """True, holding the folder's `.live` lock exclusively, when no running session holds
    the folder; False when one does. The undo records use it too: a session's spill
    folder is held for as long as it runs."""
    # O_NONBLOCK: a named pipe planted as `.live` would make a plain open wait for a
    # writer forever; opened this way it is just a file nobody holds a lock on.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(spills / LIVE, flags)
    except OSError:  # no lock file (or a planted link): nobody holds it
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class SpillClaim:
    """A running session's hold on its spill folder: a shared lock on `<folder>/.live`,
    kept until `release` (the system drops it when the process ends, however it ends).
    Pruning by other sessions skips a held folder."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def claim_spills(folder: Path) -> SpillClaim:
    """Create `folder` if needed and hold it for this session (see SpillClaim). Raises
    OSError when it cannot be created or held."""
    # `.swival` itself may have become a link since start-up (a command checked out a
    # commit holding one): never create or write anything through it.
    if any(p.is_symlink() for p in (folder.parent.parent, folder.parent, folder)):
        raise OSError(f"{folder} is behind a symlink")
    folder.mkdir(parents=True, exist_ok=True)
    for _ in range(10):
        fd = os.open(folder / LIVE, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:  # a pruner may have removed the file before we held it: take the new one
            if os.stat(folder / LIVE, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                return SpillClaim(fd)
        except FileNotFoundError:
            pass
        os.close(fd)
    raise OSError(f"could not hold {folder}")


def _age(entry: os.DirEntry[str]) -> tuple[int, int, str]:
    """Sort key, oldest first: modification time, then the file's number (files made
    within one clock tick share a time)."""
    number = NUMBER.search(entry.name)
    return (entry.stat(follow_symlinks=False).st_mtime_ns,
            int(number.group(1)) if number else 0, entry.path)
