"""What Swival keeps on disk: the project's `.swival/` directory (folder.py), the spill
files in it (spills.py), and the user's index of the sessions Swival recorded (index.py).

`.swival/` belongs to the harness. A repository can ship one, so `prepare_state_dir`
refuses a `.swival` (or a `sessions`, `out`, `history` or `undo` in it) that is a
symlink, a `.swival` that is a file, and a `history` that is no regular file (a pipe
there would hang the prompt), instead of writing through it; it creates the
directory with mode 0700 and keeps a `.gitignore` holding `*` in it, so `git add -A` never
commits transcripts full of file contents.

Spill files (outputs too large for the window, saved for the model to page through)
live in `.swival/out/<session id>/`. A running session holds its folder (a lock on the
folder's `.live` file, `claim_spills`), and pruning never touches the current session's
folder nor one another running session holds, whose files their histories may point
to; of the other sessions' files it keeps the newest SPILLS_KEPT. The same hold keeps a
running session's undo record from being pruned (`unless_live`, swival/tools/undo.py).

The session index lives in the user's state directory, where no repository can put
files: one line per transcript that this user's Swival created, per project, and a seal
per transcript: the size and SHA-256 of exactly what Swival wrote to it, renewed after
every record (SealedFile). Only indexed sessions are resumed or listed, and only while the
transcript is exactly what Swival wrote.
"""

from swival.state.folder import (
    HISTORY,
    LIVE,
    SAFE_NAME,
    SESSIONS,
    SPILLS,
    STATE_DIR,
    UNDO,
    prepare_state_dir,
    sessions_dir,
    spill_folder,
    undo_folder,
)
from swival.state.index import SealedFile, SessionIndex
from swival.state.spills import (
    SPILLS_KEPT,
    SpillClaim,
    claim_spills,
    prune_spills,
    spill_stream,
    spill_text,
    unless_live,
)

__all__ = [
    "HISTORY", "LIVE", "SAFE_NAME", "SESSIONS", "SPILLS", "SPILLS_KEPT", "STATE_DIR", "UNDO",
    "SealedFile", "SessionIndex", "SpillClaim", "claim_spills", "prepare_state_dir",
    "prune_spills", "sessions_dir", "spill_folder", "spill_stream", "spill_text",
    "undo_folder", "unless_live",
]
