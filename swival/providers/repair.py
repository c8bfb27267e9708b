"""Small-model robustness: recover tool calls written as text and repair broken JSON arguments.

`repair_completion` runs on every Completion before a provider returns it. When the reply has
no native tool calls, it looks in the text for calls to *known* tools written as

- `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Hermes / Qwen2.5 style),
- `<function=name><parameter=p>value</parameter></function>` (Qwen3-Coder style; values are
  converted to the types the tool's schema declares),
- a fenced ```json block or a bare JSON object holding "name" and "arguments" (or "parameters"),

turns them into real ToolCalls and removes them from the text. Text naming an unknown tool is
left alone (it may be an example the model is showing). `parse_arguments` repairs argument
JSON when the fix is unambiguous — trailing commas, Python True/False/None, single quotes
when the text has no double quotes, unclosed braces or brackets at the very end — and
otherwise returns a precise error that becomes `ToolCall.arguments_error`, which the tool
registry sends back to the model instead of running the call. Every repair adds a line to
`Completion.notes`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from swival.messages import Message, ToolCall
from swival.providers.base import Completion

_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|$)", re.DOTALL)
_PARAMETER_TAG = re.compile(r"<parameter=([\w.-]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
_FENCE = re.compile(r"```(?:json|tool_call|tool)?\s*\n(.*?)\n?```", re.DOTALL)
_EMPTY_TOOL_CALL_TAGS = re.compile(r"<tool_call>\s*</tool_call>|</?tool_call>")

# Where a text-written call can begin: every span `recover_text_calls` removes starts at one
# of these (a bare JSON object at any "{"). textgate.py holds streamed text back from them,
# so keep this list in step with the patterns above.
TEXT_CALL_MARKERS = ("<tool_call>", "</tool_call>", "<function=", "```", "{")
FENCE_BLOCK = _FENCE  # a whole fenced block, for textgate.py


@dataclass(frozen=True)
class ParsedArguments:
    """The outcome of `parse_arguments`: the object, or an error; `repairs` says what was fixed."""

    value: dict[str, Any]
    error: str | None = None
    repairs: tuple[str, ...] = ()


def tool_names(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The function names in a list of OpenAI tool schemas."""
    return frozenset(
        str(t.get("function", t).get("name")) for t in tools if t.get("function", t).get("name")
    )


def _scan(text: str) -> tuple[str, list[str], list[str]]:
    """One pass outside strings: swap Python literals, drop trailing commas, track openers."""
    out: list[str] = []
    stack: list[str] = []
    repairs: list[str] = []
    i, in_str, quote = 0, False, ""
    while i < len(text):
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif ch == quote:
                in_str = False
        elif ch == '"':
            in_str, quote = True, ch
            out.append(ch)
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            out.append(ch)
        elif ch in "}]":
            while out and out[-1].isspace():
                out.pop()
            if out and out[-1] == ",":
                out.pop()
                repairs.append("trailing comma")
            if stack:
                stack.pop()
            out.append(ch)
        else:
            word = re.match(r"True|False|None", text[i:])
            prev = text[i - 1] if i else " "
            if word and not (prev.isalnum() or prev == "_"):
                out.append(_PY_LITERALS[word.group(0)])
                repairs.append("Python literal")
                i += len(word.group(0))
                continue
            out.append(ch)
        i += 1
    return "".join(out), stack, repairs


def _error(exc: json.JSONDecodeError, raw: str) -> str:
    snippet = raw if len(raw) <= 120 else raw[:117] + "..."
    return (
        f"The arguments are not valid JSON ({exc.msg} at line {exc.lineno}, column "
        f"{exc.colno}): {snippet}. Send the arguments again as one JSON object with "
        'double-quoted keys and strings, e.g. {"file_path": "src/app.py"}.'
    )


def parse_arguments(raw: str | Mapping[str, Any] | None) -> ParsedArguments:
    """Parse a tool call's argument text into an object, repairing it when unambiguous."""
    if isinstance(raw, Mapping):
        return ParsedArguments(dict(raw))
    text = (raw or "").strip()
    if not text:
        return ParsedArguments({})
    try:
        value = json.loads(text)
        first_error = None
    except json.JSONDecodeError as exc:
        value, first_error = None, exc
    repairs: list[str] = []
    if first_error is not None:
        fixed = text
        if '"' not in fixed and "'" in fixed:
            fixed = fixed.replace("'", '"')
            repairs.append("single quotes")
        fixed, stack, scanned = _scan(fixed)
        repairs.extend(dict.fromkeys(scanned))
        if stack:
            fixed = fixed.rstrip().rstrip(",") + "".join(reversed(stack))
            repairs.append("unclosed braces")
        try:
            value = json.loads(fixed)
        except json.JSONDecodeError:
            return ParsedArguments({}, _error(first_error, text))
    if not isinstance(value, dict):
        kind = type(value).__name__
        return ParsedArguments({}, f"The arguments must be one JSON object, not a {kind}: "
                                   f"{text[:120]}. Send them as {{\"name\": value, ...}}.")
    return ParsedArguments(value, None, tuple(repairs))


def _schema_props(tools: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    for tool in tools:
        fn = tool.get("function", tool)
        if fn.get("name") == name:
            return (fn.get("parameters") or {}).get("properties") or {}
    return {}


def _typed(value: str, schema: Mapping[str, Any]) -> Any:
    """Convert a Qwen `<parameter>` text value to the type its schema declares."""
    kind = schema.get("type")
    stripped = value.strip()
    try:
        if kind == "integer":
            return int(stripped)
        if kind == "number":
            return float(stripped)
        if kind == "boolean" and stripped.lower() in ("true", "false"):
            return stripped.lower() == "true"
        if kind in ("array", "object"):
            return json.loads(stripped)
    except ValueError:
        pass  # keep the text; the tool's own validation will say what is wrong
    return value


def _new_id() -> str:
    return "call_" + uuid.uuid4().hex[:12]


def _call_from_object(obj: Any, names: frozenset[str]) -> tuple[ToolCall, tuple[str, ...]] | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("name")
    if name not in names:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    parsed = parse_arguments(args if isinstance(args, str | dict) else json.dumps(args))
    return ToolCall(_new_id(), str(name), parsed.value, parsed.error), parsed.repairs


def _loads_lenient(text: str) -> Any:
    parsed = parse_arguments(text)
    return parsed.value if parsed.error is None else None


@dataclass
class _Found:
    calls: list[ToolCall]
    spans: list[tuple[int, int]]
    repairs: list[str]

    def add(self, span: tuple[int, int], got: tuple[ToolCall, tuple[str, ...]] | None) -> None:
        if got is not None and not any(s <= span[0] < e for s, e in self.spans):
            self.calls.append(got[0])
            self.spans.append(span)
            self.repairs.extend(got[1])


def _find_qwen(text: str, tools: Sequence[Mapping[str, Any]], found: _Found) -> None:
    names = tool_names(tools)
    for match in _FUNCTION_TAG.finditer(text):
        name = match.group(1)
        if name not in names:
            continue
        props = _schema_props(tools, name)
        args = {p: _typed(v, props.get(p, {})) for p, v in _PARAMETER_TAG.findall(match.group(2))}
        found.add(match.span(), (ToolCall(_new_id(), name, args), ()))


def _find_json(text: str, names: frozenset[str], found: _Found) -> None:
    for pattern in (_TOOL_CALL_TAG, _FENCE):
        for match in pattern.finditer(text):
            found.add(match.span(), _call_from_object(_loads_lenient(match.group(1)), names))
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        if any(s <= start < e for s, e in found.spans):
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        found.add((start, end), _call_from_object(obj, names))


def recover_text_calls(
    text: str, tools: Sequence[Mapping[str, Any]]
) -> tuple[str, list[ToolCall], list[str]]:
    """Find calls to known tools written in `text`; return (text without them, calls, repairs)."""
    names = tool_names(tools)
    if not names or not any(mark in text for mark in ("{", "<function=")):
        return text, [], []
    found = _Found([], [], [])
    _find_qwen(text, tools, found)
    _find_json(text, names, found)
    if not found.calls:
        return text, [], []
    order = sorted(range(len(found.spans)), key=lambda i: found.spans[i][0])
    kept, pos = [], 0
    for i in order:
        start, end = found.spans[i]
        kept.append(text[pos:start])
        pos = max(pos, end)
    kept.append(text[pos:])
    rest = _EMPTY_TOOL_CALL_TAGS.sub("", "".join(kept)).strip()
    return rest, [found.calls[i] for i in order], found.repairs


def repair_completion(completion: Completion, tools: Sequence[Mapping[str, Any]]) -> Completion:
    """Recover text-written tool calls into real ones; note what was done."""
    message = completion.message
    if message.tool_calls or not message.content:
        return completion
    rest, calls, repairs = recover_text_calls(message.content, tools)
    if not calls:
        return completion
    notes = [f"recovered {len(calls)} tool call(s) written as text: "
             + ", ".join(c.name for c in calls)]
    if repairs:
        notes.append("repaired JSON arguments (" + ", ".join(dict.fromkeys(repairs)) + ")")
    new_message = Message(role="assistant", content=rest, tool_calls=tuple(calls))
    return replace(completion, message=new_message, finish_reason="tool_calls",
                   notes=completion.notes + tuple(notes))
