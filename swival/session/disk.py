"""What a session keeps on disk, seen from the session: the user's index of the sessions
Swival started, the saved session to resume, and the hold on a session's spill folder."""

from __future__ import annotations

import os
from pathlib import Path

from swival.config import Settings, user_state_dir
from swival.errors import UsageError
from swival.state import (
    SessionIndex,
    SpillClaim,
    claim_spills,
    prepare_state_dir,
    sessions_dir,
    spill_folder,
)
from swival.words import agree, plural


def session_index() -> SessionIndex:
    """This user's record of the sessions Swival started (in the user's state dir)."""
    return SessionIndex(user_state_dir(os.environ))


def find_transcript(settings: Settings, resume: str | None, latest: bool) -> Path | None:
    """The saved session to resume: `resume` by id, the newest one with `latest`.

    Only sessions this user's Swival recorded for this project (the session index in
    the user's state dir) are candidates: a transcript that came with the repository,
    or that anything else wrote, is never resumed. Checks the state dir first."""
    root = settings.project_root
    prepare_state_dir(root)
    if resume is None and not latest:
        return None
    folder, index = sessions_dir(root), session_index()
    saved = index.transcripts(root)
    strangers = index.strangers(root)
    others = (
        f" {plural(strangers, 'session file')} there {agree(strangers, 'was', 'were')} "
        "not recorded by Swival for you (they may have come with the repository); "
        f"{agree(strangers, 'that one is', 'those are')} never resumed."
        if strangers
        else ""
    )
    if resume is not None:  # a subagent's transcript only by its whole id
        matches = [sid for sid in index.transcripts(root, subagents=True) if sid == resume] or [
            sid for sid in saved if sid.startswith(resume)
        ]
        if len(matches) == 1:
            return _unchanged(index, root, matches[0])
        if not matches and (folder / f"{resume}.jsonl").exists():
            raise UsageError(
                f"Session {resume!r} in {folder} was not recorded by Swival for you (it may "
                "have come with the repository), so it will not be resumed. Sessions you "
                f"can resume: {', '.join(saved[-5:]) or 'none yet'}."
            )
    if not saved:
        raise UsageError(
            f"No session recorded in {folder} yet: start one first (run swival).{others}"
        )
    if resume is None:
        return _unchanged(index, root, saved[-1])
    what = "is ambiguous" if matches else "was not found"
    raise UsageError(
        f"Session {resume!r} {what} in {folder}. Recent sessions: {', '.join(saved[-5:])}."
    )


def _unchanged(index: SessionIndex, root: Path, session_id: str) -> Path:
    """The transcript of `session_id`; UsageError when it is not what Swival wrote."""
    path = sessions_dir(root) / f"{session_id}.jsonl"
    change = index.changed(root, session_id)
    if change is not None:
        raise UsageError(
            f"Session {session_id} ({path}) will not be resumed: {change}. "
            "Start a new session, or resume another with --resume ID."
        )
    return path


def hold_spills(state_dir: Path, session_id: str) -> SpillClaim | None:
    """Hold this session's spill folder while it runs, so another session's pruning
    leaves the files its history points to alone (None if the folder cannot be held:
    the session runs on, unprotected)."""
    try:
        return claim_spills(spill_folder(state_dir, session_id))
    except OSError:
        return None
