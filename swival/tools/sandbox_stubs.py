"""The empty read-only stand-ins the sandbox puts where a workspace has no `.git` or
`.swival` (see swival/tools/sandbox.py), and when they may go.

bwrap needs a directory to mount over, so it creates one in the workspace. Removing a
directory that is a mount point in another command's sandbox detaches that mount, so a
command still running there (another session's, in the same workspace) could then create
`.git` on the host. So every launch holds a shared lock on the workspace directory while
its command runs, and stand-ins are removed only by a launch that then gets the lock
exclusively: no sandboxed command of any process runs there any more. A stand-in whose
removal had to wait for another process stays (empty); one that waited for a command of
this process is removed by the last one out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

_PENDING: set[Path] = set()


def hold_workspace(workspace: Path) -> int | None:
    """A descriptor of `workspace` with a shared lock on it (None if it cannot be had)."""
    try:
        fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def missing_protected(workspace: Path, names: Sequence[str]) -> list[Path]:
    """The `names` absent from `workspace` (which we can write to), to be covered while a
    command runs so it cannot create them."""
    if not os.access(workspace, os.W_OK):
        return []
    return [workspace / name for name in names if not os.path.lexists(workspace / name)]


def release(workspace: Path, hold: int | None, stubs: Sequence[Path]) -> None:
    """After a command ended: remove `stubs` and any left waiting in `workspace`, when no
    other sandboxed command runs there; give the lock back."""
    _PENDING.update(stubs)
    if _last_out(hold):
        for stub in [p for p in _PENDING if p.parent == workspace]:
            _PENDING.discard(stub)
            with contextlib.suppress(OSError):
                stub.rmdir()  # only succeeds while empty: nothing of anyone's is lost
    if hold is not None:
        os.close(hold)


def _last_out(hold: int | None) -> bool:
    """Whether no other sandboxed command runs in the workspace `hold` locks (checked by
    taking the lock exclusively; closing `hold` gives it back)."""
    if hold is None:
        return True
    try:
        fcntl.flock(hold, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True
