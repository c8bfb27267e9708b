"""Conversation data: messages, tool calls, tool results and token usage.

Layer 0: imports nothing from the package. Messages are immutable and compared by
identity, so per-message caches (token counts) can key on the object itself.

Whatever a model sends, a `Message` or `ToolCall` holds only what can be encoded and sent
again: text without lone surrogates (half of a UTF-16 pair; JSON can carry one as
"\\ud800", UTF-8 cannot), and arguments without non-finite or out-of-range numbers or
absurd nesting. Text is repaired (U+FFFD); a call whose arguments needed repair is marked
with `arguments_error`, so it is refused instead of run with altered arguments.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_ARGUMENT_DEPTH = 32  # no tool takes more than two levels; the cap keeps recursion bounded
LARGEST_INTEGER = 2**63 - 1


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8."""
    return LONE_SURROGATE.sub("\ufffd", text)


def _describe_surrogate(where: str, text: str) -> str | None:
    found = LONE_SURROGATE.search(text)
    if found is None:
        return None
    return (f"{where} holds a lone surrogate (\\u{ord(found.group()):04x} at character "
            f"{found.start()}): half of a UTF-16 pair, which is not valid Unicode and cannot "
            "be written as UTF-8; send the whole character instead")


def clean_value(value: Any, where: str, depth: int = 0) -> tuple[Any, str | None]:
    """A JSON-like value made safe to encode, and what was wrong with it (None if nothing).

    Strings lose lone surrogates; non-finite floats and integers beyond 64 bits become
    None; containers nested deeper than MAX_ARGUMENT_DEPTH are cut to None. The first
    problem found is reported, naming `where` (e.g. "`content`").
    """
    if isinstance(value, str):
        problem = _describe_surrogate(where, value)
        return (clean_text(value), problem) if problem else (value, None)
    if isinstance(value, bool) or value is None:
        return value, None
    if isinstance(value, int) and abs(value) > LARGEST_INTEGER:
        return None, (f"{where} is out of range (a {value.bit_length()}-bit integer); "
                      "use a number below 2**63")
    if isinstance(value, float) and not math.isfinite(value):
        return None, f"{where} is {value}; use a finite number"
    if not isinstance(value, Mapping | list | tuple):
        return value, None
    if depth >= MAX_ARGUMENT_DEPTH:
        return None, (f"{where} is nested more than {MAX_ARGUMENT_DEPTH} levels deep; "
                      "no tool takes values nested like that")
    first: str | None = None
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            key, key_problem = clean_value(key, f"a key in {where}", depth + 1)
            out[key], problem = clean_value(item, where, depth + 1)
            first = first or key_problem or problem
        return out, first
    items = []
    for item in value:
        item, problem = clean_value(item, where, depth + 1)
        items.append(item)
        first = first or problem
    return items, first


def clean_arguments(arguments: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """Tool-call arguments made safe to encode (see `clean_value`), and the first problem,
    naming the argument. Arguments that need nothing are returned as they are."""
    cleaned: dict[str, Any] = {}
    first: str | None = None
    for key, value in arguments.items():
        name = clean_text(str(key))
        cleaned[name], problem = clean_value(value, f"argument `{name}`", 1)
        if name != key:
            problem = problem or _describe_surrogate("an argument name", str(key))
        first = first or problem
    return (arguments, None) if first is None else (cleaned, first)


@dataclass(frozen=True, eq=False)
class ToolCall:
    """A call the model asked for. `arguments` is the parsed JSON object.

    `arguments_error` is set when the model's argument text could not be parsed
    or repaired, or when the arguments held something that cannot be encoded (see the
    module docstring); the call is then answered with that error instead of being run.
    `repairs` names what was fixed in argument text that was not valid JSON (e.g.
    "single quotes"), so the model can be told along with the result.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    arguments_error: str | None = None
    repairs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", clean_text(self.id))
        object.__setattr__(self, "name", clean_text(self.name))
        arguments, problem = clean_arguments(self.arguments)
        if problem is None:
            return
        object.__setattr__(self, "arguments", arguments)
        if self.arguments_error is None:
            object.__setattr__(self, "arguments_error", (
                f"{self.name}: {problem}. The call was not run."))

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", clean_text(self.content))

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

    @property
    def failed(self) -> bool:
        """An error, a refusal, or a command that exited with a code other than 0: what
        the screen marks with a cross and stream-json reports as `ok: false`."""
        return self.is_error or self.meta.get("exit_code") not in (None, 0)


@dataclass(frozen=True)
class Usage:
    """Token figures a server reported for one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
