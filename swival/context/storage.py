"""Where the engine keeps a session on disk, and what the model server does for it.

`Storage` is the session's place in `<project>/.swival` (the state directory, which
state.prepare_state_dir makes at the project root): the transcript,
`sessions/<session id>.jsonl`, and the spill folder, `out/<session id>/`, where a
result or request too big for the window is saved whole. Everything written passes
through the session's redactor first. Paths are shown relative to the project root
(`shown`), which is where the model's tools resolve them and where the person runs
Swival; so what the model reads does not depend on where the project lives.

`ServerAid` is what the model server offers the engine beyond answering: a tool-free
model call for recaps and checkpoints, and its own count of a prompt (llama.cpp
renders its chat template and tokenizes); either may be missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from swival.context.summarize import Summarizer
from swival.context.transcript import Transcript, new_session_id
from swival.messages import Message
from swival.redaction import Redactor
from swival.state import spill_folder, spill_text

ExactCount = Callable[[Sequence[Message], Sequence[Mapping[str, Any]]], "int | None"]


@dataclass(frozen=True)
class ServerAid:
    """`summarize(instructions, messages)` answers a recap request (None when the
    model wrote none); `count(messages, schemas)` is the server's own prompt size."""

    summarize: Summarizer | None = None
    count: ExactCount | None = None


@dataclass(frozen=True)
class Storage:
    """The session's files (see the module docstring). `on_create` hears when a new
    transcript file is made, `on_seal` the size and SHA-256 of what it holds after each
    record appended to it (both for the user's session index)."""

    state_dir: Path
    session_id: str = field(default_factory=new_session_id)
    redactor: Redactor = field(default_factory=Redactor)
    on_create: Callable[[Path], None] | None = None
    on_seal: Callable[[Path, int, str], None] | None = None
    keep_todos: bool = True  # in <state_dir>/todo.md (a subagent keeps its own in memory)

    @property
    def transcript_path(self) -> Path:
        return self.state_dir / "sessions" / f"{self.session_id}.jsonl"

    def shown(self, path: Path) -> str:
        """`path` relative to the project root when inside it, else as it is."""
        root = self.state_dir.parent
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

    def where(self) -> str:
        """The transcript, as the model and the person are told of it."""
        return self.shown(self.transcript_path)

    def transcript(self, path: Path | None = None) -> Transcript:
        """The transcript writer: a new file, or with `path`, the saved one appended to."""
        if path is None:
            return Transcript(self.transcript_path, self.redactor, on_create=self.on_create,
                              on_seal=self.on_seal)
        return Transcript(path, self.redactor, resume=True, on_create=self.on_create,
                          on_seal=self.on_seal)

    def resumed(self, path: Path) -> Storage:
        """This storage for the saved session `path` (--continue, --resume)."""
        return replace(self, session_id=path.stem)

    def save(self, stem: str, text: str) -> str | None:
        """Save an oversized text, redacted, in this session's spill folder; where it
        is, as shown, or None when it cannot be written."""
        try:
            path = spill_text(self.redactor.redact(text),
                              spill_folder(self.state_dir, self.session_id), stem)
        except OSError:
            return None
        return self.shown(path)


@dataclass(frozen=True)
class Memory:
    """A session kept in memory only: no transcript, nothing saved, todos not written."""

    session_id: str = field(default_factory=new_session_id)
    state_dir: None = None
    transcript_path: None = None
    keep_todos: bool = False

    def where(self) -> str:
        return "no file (no state directory)"

    def transcript(self, path: Path | None = None) -> Transcript | None:
        return None

    def resumed(self, path: Path) -> Storage:
        return Storage(path.parent.parent, path.stem)

    def save(self, stem: str, text: str) -> str | None:
        return None
