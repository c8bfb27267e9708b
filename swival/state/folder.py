"""The project's `.swival` directory and the folders in it (see swival/state/__init__.py)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from swival.errors import UsageError

STATE_DIR = ".swival"
SESSIONS = "sessions"
SPILLS = "out"
HISTORY = "history"  # the REPL's prompt history
UNDO = "undo"  # pre-images of tool edits, for /undo (swival/tools/undo.py)
LIVE = ".live"  # in a spill folder: locked by the session that is running with it
SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


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
    if path.name == HISTORY and path.exists() and not path.is_file():
        # The prompt appends to it: opening a named pipe there waits for a reader forever.
        raise UsageError(
            f"{path} is not a regular file (it is {_kind(path)}), but Swival keeps the "
            "REPL's input history there; a repository may have shipped it. Move it away "
            f"(mv {path} {path}.bak) and start Swival again.")


def _kind(path: Path) -> str:
    """What `path`, which is no regular file, is, in words."""
    mode = path.stat().st_mode
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")]
    return next((word for test, word in kinds if test(mode)), "a file")


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
