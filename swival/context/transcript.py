"""The session transcript: `<state_dir>/sessions/<session_id>.jsonl`.

Every message is appended as it happens (flushed, not fsynced), so nothing is lost
when compaction rewrites the history the model sees. Records, one JSON object a line:

    {"type": "message", "message": {...wire form...}, "meta": {...}}   meta: tool results only
    {"type": "amend", "message": {...}}          the last message, with tail notes appended
    {"type": "compacted", "level", "reason", "tokens_before", "tokens_after", "turn"}
    {"type": "history", "messages": [...], "recap": str | null}   after every rewrite
    {"type": "clear"}

Resuming takes the last "history" (or "clear") record and applies the messages after it.

Every string in a record passes through the session's Redactor before it is written, so
no secret reaches the file. A new transcript is created with mode 0600 and never
through an existing file or symlink; `on_create` hears of it (the session index), and
`on_seal` gets the size and SHA-256 of what Swival wrote after every record (the index
keeps them, so a transcript changed by anything else is not resumed; state.SealedFile).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swival.events import Compacted
from swival.messages import Message, clean_text
from swival.redaction import Redactor
from swival.state import SealedFile


def new_session_id(now: float | None = None) -> str:
    """A time-sortable id such as 20261123-121500-ab12."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{secrets.token_hex(2)}"


@dataclass
class Replayed:
    """What a transcript holds for resuming: the history at the end, every record in
    order (the ledger is rebuilt from them) and the recap of the last rewrite."""

    history: list[Message] = field(default_factory=list)
    recap: str | None = None
    rewritten: bool = False  # a pinned block existed (history was rewritten before)
    records: list[dict[str, Any]] = field(default_factory=list)


class Transcript:
    """Append-only JSONL writer. Open lazily so a session that never speaks leaves no
    file. With `resume`, appends to the existing file; otherwise creates a new one."""

    def __init__(self, path: Path, redactor: Redactor | None = None, *, resume: bool = False,
                 on_create: Callable[[Path], None] | None = None,
                 on_seal: Callable[[Path, int, str], None] | None = None) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        self._resume = resume
        self._on_create = on_create
        self._on_seal = on_seal
        self._file: SealedFile | None = None

    def _open(self) -> SealedFile:
        if not self._resume:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        on_seal = self._on_seal
        handle = SealedFile.open(self.path, create=not self._resume, on_seal=None if (
            on_seal is None) else lambda size, digest: on_seal(self.path, size, digest))
        if not self._resume and self._on_create is not None:
            self._on_create(self.path)
        self._resume = True
        return handle

    def _write(self, record: Mapping[str, Any]) -> None:
        if self._file is None:
            self._file = self._open()
        # Tool metadata may carry text from the disk (file names that are not UTF-8); a log
        # line must never fail to encode, so such characters are replaced.
        line = clean_text(json.dumps(self.redactor.scrub(record), ensure_ascii=False,
                                     default=str))
        self._file.append((line + "\n").encode("utf-8"))

    def message(self, message: Message, meta: Mapping[str, Any] | None = None) -> None:
        record: dict[str, Any] = {"type": "message", "message": message.to_dict()}
        if meta:
            record["meta"] = dict(meta)
        self._write(record)

    def amend(self, message: Message) -> None:
        self._write({"type": "amend", "message": message.to_dict()})

    def compacted(self, event: Compacted) -> None:
        self._write({"type": "compacted", "level": event.level, "reason": event.reason,
                     "tokens_before": event.tokens_before, "tokens_after": event.tokens_after,
                     "turn": event.turn})

    def history(self, messages: Sequence[Message], recap: str | None) -> None:
        self._write({"type": "history", "messages": [m.to_dict() for m in messages],
                     "recap": recap})

    def clear(self) -> None:
        self._write({"type": "clear"})

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def replay(path: Path) -> Replayed:
    """Rebuild the state a transcript ends in. A torn last line (a crash while
    writing) is skipped; any other bad line raises ValueError naming it."""
    out = Replayed()
    # Split on "\n" only: records written with ensure_ascii=False may hold U+2028, \x85 and
    # other characters str.splitlines() would also break at.
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(
                f"{path}:{number}: not a transcript record; the file is damaged"
            ) from None
        out.records.append(record)
        kind = record.get("type")
        if kind == "message":
            out.history.append(Message.from_dict(record["message"]))
        elif kind == "amend" and out.history:
            out.history[-1] = Message.from_dict(record["message"])
        elif kind == "history":
            out.history = [Message.from_dict(m) for m in record["messages"]]
            out.recap = record.get("recap")
            out.rewritten = True
        elif kind == "clear":
            out.history, out.recap, out.rewritten = [], None, False
    return out

