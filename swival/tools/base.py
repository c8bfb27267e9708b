"""The tool protocol and the context every tool runs in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from swival.messages import ToolResult
from swival.redaction import Redactor
from swival.state import STATE_DIR, spill_folder
from swival.tools.fetch_policy import FetchPolicy, Network
from swival.tools.sandbox import Mounts, Sandbox
from swival.tools.undo import UndoJournal


class ToolError(Exception):
    """A failure the model should read and act on; the registry turns it into
    `ToolResult(is_error=True)`."""


@dataclass(frozen=True)
class ToolSpec:
    """Name, one-line description and JSON schema. Every token of these is paid on
    every request, so descriptions stay short."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


# Asked before a command runs: returns None to allow it, or the reason it was refused.
Approver = Callable[[str], str | None]
# Asked before a file is written, with its name (as shown), the diff and whether it is
# new: None to allow it, or the reason it was refused (see approval.EditPolicy).
EditApprover = Callable[[str, str, bool], str | None]


@dataclass
class ToolContext:
    """Per-session state the tools share. `read_files` maps resolved paths to the
    (mtime_ns, size) seen when the model last read them, for safe writes. `fetch_policy`
    decides what fetch_url may reach (by default: nothing without asking, and nobody to
    ask); `network` None means the real resolver and sockets. `sandbox` confines commands
    (default: not sandboxed, secrets still kept out of their environment). `redactor`
    hides the session's secrets in what tools write and show, and puts them back when the
    model writes a file that held them. `session_id` names the spill folder.
    `approve_edit` is asked before every write (default: allowed); `undo` keeps what each
    write replaced, for /undo (None: nothing is kept)."""

    root: Path
    extra_dirs: tuple[Path, ...] = ()
    read_only_dirs: tuple[Path, ...] = ()
    command_timeout: float = 120.0
    approve: Approver = field(default=lambda _command: None)
    read_files: dict[Path, tuple[int, int]] = field(default_factory=dict)
    fetch_policy: FetchPolicy = field(default_factory=FetchPolicy)
    network: Network | None = None
    sandbox: Sandbox = field(default_factory=Sandbox)
    redactor: Redactor = field(default_factory=Redactor)
    session_id: str = "session"
    approve_edit: EditApprover = field(default=lambda _name, _diff, _new: None)
    undo: UndoJournal | None = None

    @property
    def spill_dir(self) -> Path:
        """Where oversized outputs are written for the model to page through."""
        return spill_folder(self.root / STATE_DIR, self.session_id)

    @property
    def mounts(self) -> Mounts:
        """What a command may write (the root first, then `extra_dirs`) and only read."""
        return Mounts((self.root, *self.extra_dirs), self.read_only_dirs)


class Tool(Protocol):
    spec: ToolSpec
    read_only: bool  # True when running it cannot change the workspace (snapshot scope)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult: ...
