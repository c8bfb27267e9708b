"""The tool protocol and the context every tool runs in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from swival.events import Event
from swival.messages import ToolResult, Usage
from swival.redaction import Redactor
from swival.state import STATE_DIR, spill_folder
from swival.tools.fetch_policy import FetchPolicy, Network
from swival.tools.sandbox import Mounts, Sandbox
from swival.tools.undo import UndoJournal


class ToolError(Exception):
    """A failure the model should read and act on; the registry turns it into
    `ToolResult(is_error=True)`, with `summary` (a few words for the person, when the
    message is worded for the model only) as its `meta["summary"]`."""

    def __init__(self, message: str, summary: str | None = None) -> None:
        super().__init__(message)
        self.summary = summary


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


@dataclass(frozen=True)
class ChildRun:
    """How a subagent's run ended. `reason` is the child's exit reason ("done",
    "max_turns", "context_exhausted", "output_limit", "error"); with "done", `answer` is
    its final answer, otherwise `error` says why it stopped (for the model). `limit` is
    the most characters of the answer the parent may be given (the child was told);
    `transcript` names the file its conversation is saved in."""

    reason: str
    answer: str = ""
    error: str = ""
    limit: int = 4000
    transcript: str = ""
    turns: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)


# Runs a subagent on a prompt, its answer capped at the given characters, passing each
# of the child's events to the callable; made by the session layer (the tools cannot
# build an agent). Ctrl-C propagates, after the child's conversation was closed.
Spawn = Callable[[str, int, Callable[[Event], None]], ChildRun]


@dataclass
class SubagentTotals:
    """The session's subagents so far: task calls run, failed, and the tokens the
    server reported for the children's requests (counted apart from the parent's)."""

    tasks: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, usage: Usage, ok: bool) -> None:
        self.failed += not ok
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens


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
    write replaced, for /undo (None: nothing is kept). `spawn` runs a subagent for the
    task tool (None: subagents cannot run here, as in a subagent itself); `on_event`
    hears what a tool reports while it runs (a subagent's steps); `subagents` adds up
    the children's runs."""

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
    spawn: Spawn | None = None
    on_event: Callable[[Event], None] = field(default=lambda _event: None)
    subagents: SubagentTotals = field(default_factory=SubagentTotals)

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
