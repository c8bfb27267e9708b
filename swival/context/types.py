"""The engine's value types and the facts it keeps about each tool result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swival.context import compaction
from swival.context.compaction import ResultInfo
from swival.context.protocols import Collapse, ScopeLike
from swival.context.tokens import TokenCounter
from swival.events import Compacted
from swival.messages import Message, ToolCall, ToolResult
from swival.redaction import Redactor

_KIND_BY_TOOL = {"read_file": "file", "grep": "matches", "run_command": "command",
                 "list_files": "listing"}
_META_KEYS = ("kind", "path", "lines", "pattern", "matches", "exit_code", "changed",
              "spill_path", "offset")


@dataclass(frozen=True)
class ContextSettings:
    window: int  # tokens to budget on (the real window, or 8192 when unknown)
    max_output_tokens: int = 32768
    tool_result_share: float = 0.2
    compaction_trigger: float = 0.85
    compaction_target: float = 0.6
    proactive_summaries: bool = False
    counts_include_cache: bool = True  # the server's prompt counts cover cached tokens


@dataclass(frozen=True)
class Prepared:
    messages: tuple[Message, ...]  # exactly what to send (system first)
    max_output_tokens: int  # what fits in the window, at most the configured limit
    estimated_tokens: int  # calibrated count of messages + tool schemas
    events: tuple[Compacted, ...]  # compactions this call caused
    room_limited: bool = False  # the window's room, not max_output_tokens, set the limit


@dataclass(frozen=True)
class Extras:
    """Optional collaborators: a shared counter (tiktoken loads once), the snapshot
    scope and collapse function (default: swival.context.snapshot), a session id, the
    redactor for everything written under the state dir (transcript, spill files), and
    who to tell when a new transcript file is created (the session index)."""

    counter: TokenCounter | None = None
    scope: ScopeLike | None = None
    collapse: Collapse | None = None
    session_id: str | None = None
    redactor: Redactor | None = None
    on_transcript: Callable[[Path], None] | None = None


@dataclass
class EngineState:
    """Bookkeeping that a rewrite or /clear resets."""

    recap: str | None = None
    appends: int = 0  # messages added since the last rewrite
    last_level: int = 0  # level of the last compaction (0: none since new content)
    sent_len: int = 0  # history length at the last prepare()
    batch: list[tuple[str, bool]] = field(default_factory=list)
    pending_notes: list[str] = field(default_factory=list)
    checkpoint_index: int = 0
    checkpoint_turn: int = 0


def tool_meta(result: ToolResult) -> dict[str, Any]:
    meta = {k: result.meta[k] for k in _META_KEYS if k in result.meta}
    if result.is_error:
        meta["is_error"] = True
    return meta


def result_info(call: ToolCall, result: ToolResult) -> ResultInfo:
    meta, args = result.meta, call.arguments
    return ResultInfo(
        name=call.name,
        kind=str(meta.get("kind") or _KIND_BY_TOOL.get(call.name, "generic")),
        path=meta.get("path") or args.get("path"),
        lines=meta.get("lines"),
        pattern=meta.get("pattern") or args.get("pattern"),
        matches=meta.get("matches"),
        is_error=result.is_error or meta.get("exit_code") not in (None, 0),
        wrote=bool(meta.get("changed")) or call.name in compaction.WRITE_TOOLS,
    )
