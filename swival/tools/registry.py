"""The set of tools offered to the model, argument checking and dispatch.

Everything a model can get wrong about a call (unknown tool, missing or mistyped
argument, unparseable JSON, the same call over and over) comes back as a tool error
the model can read, never as an exception.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from swival.messages import ToolCall, ToolResult
from swival.tools.base import Tool, ToolContext, ToolError
from swival.words import agree

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}

REPEAT_WINDOW = 6
REPEAT_LIMIT = 3


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A schema's properties (an MCP server's schema may hold anything there)."""
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}


def _declared(spec: Any) -> list[str] | None:
    """The JSON types a property schema allows besides null ("type": "string", or a list
    such as ["string", "null"]); None when it declares none, or one not checked here."""
    want = spec.get("type") if isinstance(spec, Mapping) else None
    names = [want] if isinstance(want, str) else want if isinstance(want, list) else []
    names = [name for name in names if name != "null"]
    if not names or not all(isinstance(n, str) and n in _JSON_TYPES for n in names):
        return None
    return names


_WHOLE = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# What each JSON type looks like, for the model told it sent the wrong one.
_LOOKS = {
    "string": 'text in double quotes, e.g. "abc"',
    "integer": "a whole number without quotes, e.g. 10",
    "number": "a number without quotes, e.g. 2.5",
    "boolean": "true or false, without quotes",
    "array": 'a JSON list, e.g. ["a", "b"]',
    "object": 'a JSON object, e.g. {"key": "value"}',
}
_JSON_NAME = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
              dict: "object"}


def _coerced(value: Any, declared: list[str]) -> Any:
    """`value` as the declared type when the way it was sent leaves no doubt: "10" or
    10.0 for an integer, "2.5" for a number, "true"/"false" for a boolean, a string of
    JSON for an object or array. Anything else (and any string where a string is also
    allowed) comes back as it was, for check_arguments to judge."""
    if isinstance(value, float) and "integer" in declared and "number" not in declared:
        return int(value) if value.is_integer() else value
    if not isinstance(value, str) or "string" in declared:
        return value
    text = value.strip()
    if "boolean" in declared and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if ("integer" in declared or "number" in declared) and _DECIMAL.fullmatch(text):
        if _WHOLE.fullmatch(text):
            return int(text)
        number = float(text)
        if not math.isfinite(number):
            return value
        if "number" in declared:
            return number
        return int(number) if number.is_integer() else value
    if declared in (["object"], ["array"]):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, _JSON_TYPES[declared[0]]) else value
    return value


def decoded(schema: Mapping[str, Any], args: Mapping[str, Any]) -> Mapping[str, Any]:
    """`args` with each value sent in a form small models often use for its declared
    type (a number or boolean in a string, an object or array encoded twice, e.g.
    mcp_call's `arguments`) turned into that type where that is unambiguous (_coerced),
    and a choice of an enum sent in other case or with spaces taken as that choice;
    anything else is left for check_arguments to report."""
    props = _properties(schema)
    out = dict(args)
    for name, value in args.items():
        spec = props.get(name)
        declared = _declared(spec)
        if declared is not None and value is not None:
            out[name] = value = _coerced(value, declared)
        choices = spec.get("enum") if isinstance(spec, Mapping) else None
        if isinstance(value, str) and isinstance(choices, list) and value not in choices:
            # "Restore" or " restore" for "restore": the one choice it can mean
            near = [c for c in choices if isinstance(c, str)
                    and c.casefold() == value.strip().casefold()]
            out[name] = near[0] if len(near) == 1 else value
    return out


def _wrong_type(name: str, value: Any, declared: list[str]) -> str:
    """What the model is told about an argument of the wrong type: what to send."""
    sent = json.dumps(value, ensure_ascii=False)
    shown = sent if len(sent) <= 40 else sent[:39] + "…"
    looks = "; or ".join(_LOOKS[d] for d in declared)
    return (f"argument `{name}` must be of type {' or '.join(declared)} ({looks}), got "
            f"{_JSON_NAME.get(type(value), type(value).__name__)} {shown}")


def check_arguments(schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """Return a precise complaint about `args`, or None when they fit `schema`."""
    props = _properties(schema)
    missing = [name for name in schema.get("required", ()) if args.get(name) is None]
    if missing:
        return (f"missing required {agree(len(missing), 'argument', 'arguments')}: "
                + ", ".join(missing))
    unknown = [name for name in args if name not in props]
    if unknown:
        return (f"unknown {agree(len(unknown), 'argument', 'arguments')}: {', '.join(unknown)}; "
                f"this tool takes: {', '.join(props) or 'nothing'}")
    for name, value in args.items():
        spec = props[name] if isinstance(props[name], Mapping) else {}
        declared = _declared(spec)
        if value is None or declared is None:
            pass
        elif (not isinstance(value, tuple(t for d in declared for t in _JSON_TYPES[d]))
              or (isinstance(value, bool) and "boolean" not in declared)):
            return _wrong_type(name, value, declared)
        choices = spec.get("enum")
        if value is not None and choices and value not in choices:
            return (f"argument `{name}` must be one of {', '.join(map(str, choices))}; got "
                    f"{json.dumps(value, ensure_ascii=False)[:40]}")
    return None


class ToolRegistry:
    """Holds the tools, their schemas, and the repeated-call guard for one session. In
    `read_only` mode only the tools that cannot change anything are offered and run."""

    def __init__(self, tools: Iterable[Tool], *, read_only: bool = False,
                 withheld: Mapping[str, tuple[str, str]] | None = None) -> None:
        self._tools: dict[str, Tool] = {t.spec.name: t for t in tools}
        self._recent: deque[str] = deque(maxlen=REPEAT_WINDOW)
        self.read_only = read_only
        # Tools deliberately not given (a subagent's): name -> (for the model, the person).
        self._withheld = dict(withheld or {})

    @property
    def names(self) -> list[str]:
        """The tools offered now."""
        return [name for name, tool in self._tools.items() if self._offered(tool)]

    @property
    def every_name(self) -> list[str]:
        """Every tool held, offered now or not (plan mode offers only some)."""
        return list(self._tools)

    @property
    def withheld(self) -> dict[str, tuple[str, str]]:
        """The names not given, with what a call to one gets (model, person)."""
        return dict(self._withheld)

    def _offered(self, tool: Tool) -> bool:
        return self._changes_nothing(tool) or not self.read_only

    def _changes_nothing(self, tool: Tool) -> bool:
        """Read-only by nature, or (`follows_mode`: the task tool, whose subagents get
        only the tools offered now) because this session is read-only now."""
        return tool.read_only or (self.read_only and getattr(tool, "follows_mode", False))

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas of the tools offered now, in a fixed order."""
        return [t.spec.schema() for t in self._tools.values() if self._offered(t)]

    def is_read_only(self, name: str) -> bool:
        tool = self._tools.get(name)
        return tool is not None and self._changes_nothing(tool)

    def reset(self) -> None:
        self._recent.clear()

    def swap(self, remove: Iterable[str], add: Iterable[Tool],
             withheld: Mapping[str, tuple[str, str]] | None = None) -> None:
        """Drop the tools (or withheld names) in `remove` and append `add` (tools that
        come as a set, such as an MCP server's; the others keep their place and order),
        and `withheld`: names not given, with what a call to one gets."""
        for name in remove:
            self._tools.pop(name, None)
            self._withheld.pop(name, None)
        self._tools.update((t.spec.name, t) for t in add)
        self._withheld.update(withheld or {})

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Check and run one call. Never raises for anything the model did."""
        tool = self._tools.get(call.name)
        if tool is None and call.name in self._withheld:
            text, shown = self._withheld[call.name]
            return ToolResult(text, is_error=True, meta={"refused": True, "summary": shown})
        if tool is None:
            close = difflib.get_close_matches(call.name, self._tools, n=1, cutoff=0.5)
            hint = f" Did you mean `{close[0]}`?" if close else ""
            return ToolResult(
                f"error: there is no tool named `{call.name}`.{hint} "
                f"Available tools: {', '.join(self.names)}.",
                is_error=True,
            )
        if not self._offered(tool):
            return ToolResult(
                f"error: {call.name} is not available: this session is read-only (plan mode), "
                f"so only these tools run: {', '.join(self.names)}. Describe the change you "
                "would make instead; the user can leave plan mode (/plan in the REPL; a new run "
                "without --read-only).", is_error=True,
                meta={"refused": True, "summary": "not run: plan mode (read-only tools only)"})
        if call.arguments_error:
            return ToolResult(f"error: {call.arguments_error}", is_error=True)
        arguments = decoded(tool.spec.parameters, call.arguments)
        problem = check_arguments(tool.spec.parameters, arguments)
        if problem:
            return ToolResult(f"error: {call.name}: {problem}.", is_error=True)
        fingerprint = call.name + "\0" + call.arguments_json()
        repeats = sum(1 for f in self._recent if f == fingerprint)
        self._recent.append(fingerprint)
        if repeats + 1 >= REPEAT_LIMIT:
            return ToolResult(
                f"error: this exact {call.name} call was already made {repeats} times in the "
                "last few steps and was not run again. Its result is above (or was compacted); "
                "use it, change the arguments, or try a different approach.",
                is_error=True,
            )
        try:
            result = tool.run(arguments, ctx)
        except ToolError as exc:
            meta = {"summary": exc.summary} if exc.summary else {}
            return ToolResult(f"error: {exc}", is_error=True, meta=meta)
        except Exception as exc:  # a bug in a tool must not end the session
            return ToolResult(
                f"error: {call.name} failed unexpectedly: {type(exc).__name__}: {exc}",
                is_error=True,
            )
        if result.meta.get("changed") and not result.is_error:
            # Files changed: re-reading them or re-running the tests is progress, not a loop.
            self._recent.clear()
        return result
