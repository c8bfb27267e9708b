"""Stand-ins and baselines for benchmarks/replay.py (kept apart to keep both short)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from swival.context import caps, compaction
from swival.context.budget import Budget
from swival.context.tokens import TokenCounter
from swival.effects import ThinkEffect, TodoEffect
from swival.events import Compacted
from swival.messages import Message, ToolCall, ToolResult


def _tool(name: str, description: str, **props: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object",
                       "properties": {k: {"type": v} for k, v in props.items()},
                       "required": [next(iter(props))]}}}


# The normalized tools of the trajectories, described as tersely as our own tools are.
SCHEMAS = [
    _tool("read_file", "Read a file (50 KB max; use offset/limit).", path="string",
          offset="integer", limit="integer"),
    _tool("list_files", "List a directory (100 entries max).", path="string"),
    _tool("grep", "Search files for a regex (100 matches max).", pattern="string",
          path="string"),
    _tool("run_command", "Run a shell command in the project.", command="string"),
    _tool("edit_file", "Replace old text with new text in a file.", path="string",
          old="string", new="string"),
    _tool("write_file", "Create or overwrite a file.", path="string", content="string"),
    _tool("think", "Record a reasoning step.", thought="string"),
]

READ_CAP = 50_000
LINE_CAP = 2_000
COMMAND_INLINE = 10_000
ENTRY_CAP = 100


def fixed_caps(tool: str, content: str) -> str:
    """The tools' own caps (layer 1), as our tools apply them before the engine."""
    if tool == "read_file":
        lines = [ln if len(ln) <= LINE_CAP else ln[:LINE_CAP] + " [line cut]"
                 for ln in content.split("\n")]
        text = "\n".join(lines)
        return text if len(text) <= READ_CAP else text[:READ_CAP] + "\n[cut at 50 KB]"
    if tool in ("grep", "list_files"):
        lines = content.split("\n")
        if len(lines) > ENTRY_CAP:
            return "\n".join(lines[:ENTRY_CAP]) + f"\n[{len(lines) - ENTRY_CAP} more not shown]"
        return content
    if len(content) > COMMAND_INLINE:
        half = COMMAND_INLINE // 2 - 200
        return (f"{content[:half]}\n[... {len(content) - 2 * half} characters saved to "
                f".swival/out/command.txt ...]\n{content[-half:]}")
    return content


_PATH = re.compile(r"[\w./-]+\.(?:py|txt|cfg|toml|rst|md|json|yaml|yml)\b")
_ERROR = re.compile(r"^\s*\w+(?:Error|Exception): .*$", re.M)


def stand_in_summary(instructions: str, messages: Sequence[Message]) -> str:
    """A deterministic recap: the task line, paths mentioned and the last error."""
    text = "\n".join(m.content for m in messages)
    paths = list(dict.fromkeys(_PATH.findall(text)))[-12:]
    errors = _ERROR.findall(text)
    task = next((ln for ln in text.splitlines() if ln.startswith("USER:")), "none")
    return "\n".join([
        "## Task", task[:300], "## Decisions", "none",
        "## Files and artifacts", *(f"- {p}" for p in paths),
        "## Constraints", "none", "## Pending", "none",
        "## Narrative", f"- {len(text)} characters recapped; last error: "
        + (errors[-1].strip()[:200] if errors else "none"),
    ])


class NullKnowledge:
    """Knowledge with nothing in it: the trajectories have no think/todo/snapshot calls."""

    def apply(self, effect: ThinkEffect | TodoEffect, turn: int) -> ToolResult:
        return ToolResult("ok")

    def pinned_sections(self) -> list[str]:
        return []

    def observe_batch(self, turn: int, tool_names: Sequence[str], all_read_only: bool) -> None:
        return None

    def tail_notes(self, turn: int) -> list[str]:
        return []

    def add_snapshot_summary(self, label: str | None, summary: str, turn: int) -> str:
        return summary

    def add_checkpoint(self, text: str, turn: int) -> None:
        return None

    def checkpoint_text(self) -> str | None:
        return None

    def needs_consolidation(self) -> list[str] | None:
        return None

    def replace_oldest(self, merged: str, count: int) -> None:
        return None

    def clear(self) -> None:
        return None

    def reload(self) -> None:
        return None


class NullScope:
    def save(self, label: str | None, history_len: int) -> str:
        return ""

    def cancel(self) -> str:
        return ""

    def status(self, history_len: int) -> str:
        return ""

    def note_tool(self, tool_name: str, read_only: bool) -> None:
        return None

    def scope_start(self, history: Sequence[Message]) -> int:
        return len(history)

    def restore_check(self, force: bool) -> str | None:
        return None

    def restored(self, new_history_len: int) -> None:
        return None

    def rewritten(self) -> None:
        pass

    def reset(self) -> None:
        return None


def null_collapse(history: Sequence[Message], start: int, recap: str) -> list[Message]:
    return list(history)


@dataclass(frozen=True)
class Request:
    messages: tuple[Message, ...]
    events: tuple[Compacted, ...] = ()


class Baseline:
    """`drop`: drop the oldest turns until the prompt fits the input budget.
    `every`: before every call, recap all but the last two turns."""

    def __init__(self, system: str, window: int, counter: TokenCounter, mode: str) -> None:
        self.system = Message(role="system", content=system)
        self.budget = Budget(window, 32768, 0.85, 0.6)
        self.counter = counter
        self.mode = mode
        self.history: list[Message] = []
        self.recap: Message | None = None
        self.schema_tokens = counter.schemas(SCHEMAS)

    def add_user(self, text: str) -> None:
        self.history.append(Message(role="user", content=text))

    def add_assistant(self, message: Message) -> None:
        self.history.append(message)

    def add_tool_result(self, call: ToolCall, result: ToolResult, *, read_only: bool) -> None:
        limit = int(self.budget.input_budget * 0.2)
        content, _ = caps.cap_result(result.content, result.meta, limit, self.counter.text,
                                     lambda text: None)
        self.history.append(Message(role="tool", content=content, tool_call_id=call.id,
                                    name=call.name))

    def after_tool_batch(self, turn: int) -> list[Compacted]:
        return []

    def _tokens(self) -> int:
        head = [self.system] + ([self.recap] if self.recap else [])
        return self.counter.messages(head + self.history) + self.schema_tokens

    def prepare(self, turn: int) -> Request:
        if self.mode == "drop":
            while self._tokens() > self.budget.input_budget and len(self.history) > 1:
                spans = compaction.turn_spans(self.history)
                self.history = self.history[spans[1][0]:] if len(spans) > 1 else self.history
                if len(spans) <= 1:
                    break
        else:
            kept, dropped = compaction.nuclear(self.history, 2)
            if dropped:
                previous = [self.recap] if self.recap else []
                text = stand_in_summary("", [*previous, *dropped])
                self.recap = Message(role="user", content="Recap:\n" + text)
                self.history = kept
        head = [self.system] + ([self.recap] if self.recap else [])
        return Request(tuple(head + self.history))
