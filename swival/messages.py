"""Conversation data: messages, tool calls, tool results and token usage.

Layer 0: imports nothing from the package. Messages are immutable and compared by
identity, so per-message caches (token counts) can key on the object itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, eq=False)
class ToolCall:
    """A call the model asked for. `arguments` is the parsed JSON object.

    `arguments_error` is set when the model's argument text could not be parsed
    or repaired; the call is then answered with that error instead of being run.
    `repairs` names what was fixed in argument text that was not valid JSON (e.g.
    "single quotes"), so the model can be told along with the result.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    arguments_error: str | None = None
    repairs: tuple[str, ...] = ()

    def arguments_json(self) -> str:
        return json.dumps(dict(self.arguments), ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, eq=False)
class Message:
    """One chat message in OpenAI chat format."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form sent to OpenAI-compatible servers."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json()},
                }
                for c in self.tool_calls
            ]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id or ""
            if self.name:
                out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Inverse of `to_dict` (also accepts `arguments` given as an object)."""
        calls = []
        for raw in data.get("tool_calls") or ():
            fn = raw.get("function", raw)
            args = fn.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError:
                    args = {}
            calls.append(ToolCall(id=raw.get("id", ""), name=fn.get("name", ""), arguments=args))
        return cls(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=tuple(calls),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns. Tool failures are data (`is_error`), never exceptions.

    `meta` carries facts the harness uses without parsing text: `kind` (output
    shape: command | matches | file | listing | generic), `path`, `lines`,
    `exit_code`, `pattern`, `matches`, `changed` (list of [path, created|modified|deleted]),
    `spill_path`. `effect` is a request for the context layer (think/todo/snapshot).
    """

    content: str
    is_error: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
    effect: object | None = None


@dataclass(frozen=True)
class Usage:
    """Token figures a server reported for one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
