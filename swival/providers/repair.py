"""Small-model robustness: recover tool calls written as text and repair broken JSON arguments.

`repair_completion` runs on every Completion before a provider returns it. When the reply has
no native tool calls, it looks in the text for calls to *known* tools written as

- `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Hermes / Qwen2.5 style),
- `<function=name><parameter=p>value</parameter></function>` (Qwen3-Coder style; values are
  converted to the types the tool's schema declares),
- a fenced ```json block or a bare JSON object holding "name" and "arguments" (or "parameters"),

turns them into real ToolCalls and removes them from the text. Text naming an unknown tool is
left alone (it may be an example the model is showing). Arguments go through
`jsonfix.parse_arguments`, which repairs what is unambiguous and otherwise returns a precise
error that becomes `ToolCall.arguments_error`, which the tool registry sends back to the model
instead of running the call. Each recovered call lists "written as text" and its argument
repairs in `ToolCall.repairs`; `repair_note` turns the argument repairs into the line the model
sees with the result, and `Completion.notes` says it all for the user. A reply cut by the
output limit never has its last call completed: it is answered with an error.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from swival.messages import Message, ToolCall
from swival.providers.base import Completion
from swival.providers.jsonfix import CUT_OFF_ERROR, parse_arguments
from swival.words import plural

_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|$)", re.DOTALL)
_PARAMETER_TAG = re.compile(r"<parameter=([\w.-]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
_FENCE = re.compile(r"```(?:json|tool_call|tool)?\s*\n(.*?)\n?```", re.DOTALL)
_EMPTY_TOOL_CALL_TAGS = re.compile(r"<tool_call>\s*</tool_call>|</?tool_call>")
_NAME_FIELD = re.compile(r"[\"']name[\"']\s*:\s*[\"']([\w.-]+)")
WRITTEN_AS_TEXT = "written as text"  # the first repair of every call recovered from text

# Where a text-written call can begin: every span `recover_text_calls` removes starts at one
# of these (a bare JSON object at any "{"). textgate.py holds streamed text back from them,
# so keep this list in step with the patterns above.
TEXT_CALL_MARKERS = ("<tool_call>", "</tool_call>", "<function=", "```", "{")
FENCE_BLOCK = _FENCE  # a whole fenced block, for textgate.py


def tool_names(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The function names in a list of OpenAI tool schemas."""
    return frozenset(
        str(t.get("function", t).get("name")) for t in tools if t.get("function", t).get("name")
    )


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
    except (ValueError, RecursionError):
        pass  # keep the text; the tool's own validation will say what is wrong
    return value


def new_call_id() -> str:
    """An id for a call the server sent without one (unique within a session)."""
    return "call_" + uuid.uuid4().hex[:12]


def _call_from_object(obj: Any, names: frozenset[str], cut_off: bool) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("name")
    if name not in names:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    parsed = parse_arguments(args if isinstance(args, str | dict) else json.dumps(args),
                             cut_off=cut_off)
    return ToolCall(new_call_id(), str(name), parsed.value, parsed.error,
                    (WRITTEN_AS_TEXT, *parsed.repairs))


def _loads_lenient(text: str, cut_off: bool) -> Any:
    parsed = parse_arguments(text, cut_off=cut_off)
    return parsed.value if parsed.error is None else None


def _cut_call(name: str | None, names: frozenset[str]) -> ToolCall | None:
    """A call to a known tool that the output limit cut off: answered with an error."""
    if name not in names:
        return None
    return ToolCall(new_call_id(), str(name), {}, CUT_OFF_ERROR, (WRITTEN_AS_TEXT,))


@dataclass
class _Found:
    names: frozenset[str]
    cut_off: bool  # the reply stopped at the output limit: a call running to its end was cut
    calls: list[ToolCall] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)

    def add(self, span: tuple[int, int], call: ToolCall | None) -> None:
        if call is not None and not any(s <= span[0] < e for s, e in self.spans):
            self.calls.append(call)
            self.spans.append(span)


def _find_qwen(text: str, tools: Sequence[Mapping[str, Any]], found: _Found) -> None:
    for match in _FUNCTION_TAG.finditer(text):
        name = match.group(1)
        if name not in found.names:
            continue
        if found.cut_off and not match.group(0).endswith("</function>"):
            found.add(match.span(), _cut_call(name, found.names))
            continue
        props = _schema_props(tools, name)
        args = {p: _typed(v, props.get(p, {})) for p, v in _PARAMETER_TAG.findall(match.group(2))}
        found.add(match.span(), ToolCall(new_call_id(), name, args, None, (WRITTEN_AS_TEXT,)))


def _find_json(text: str, found: _Found) -> None:
    for pattern in (_TOOL_CALL_TAG, _FENCE):
        for match in pattern.finditer(text):
            body = match.group(1)
            call = _call_from_object(_loads_lenient(body, found.cut_off), found.names,
                                     found.cut_off)
            if call is None and found.cut_off and match.end() == len(text):
                named = _NAME_FIELD.search(body)
                call = _cut_call(named.group(1) if named else None, found.names)
            found.add(match.span(), call)
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        if any(s <= start < e for s, e in found.spans):
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # ValueError: also a number too long to convert
            continue
        found.add((start, end), _call_from_object(obj, found.names, False))


def recover_text_calls(
    text: str, tools: Sequence[Mapping[str, Any]], *, cut_off: bool = False
) -> tuple[str, list[ToolCall]]:
    """Find calls to known tools written in `text`; return (text without them, calls).

    `cut_off`: the reply stopped at the output limit, so a call that runs to the end of the
    text is answered with CUT_OFF_ERROR instead of being completed."""
    names = tool_names(tools)
    if not names or not any(mark in text for mark in ("{", "<function=")):
        return text, []
    found = _Found(names, cut_off)
    _find_qwen(text, tools, found)
    _find_json(text, found)
    if not found.calls:
        return text, []
    order = sorted(range(len(found.spans)), key=lambda i: found.spans[i][0])
    kept, pos = [], 0
    for i in order:
        start, end = found.spans[i]
        kept.append(text[pos:start])
        pos = max(pos, end)
    kept.append(text[pos:])
    rest = _EMPTY_TOOL_CALL_TAGS.sub("", "".join(kept)).strip()
    return rest, [found.calls[i] for i in order]


def repair_completion(completion: Completion, tools: Sequence[Mapping[str, Any]]) -> Completion:
    """Recover text-written tool calls into real ones; note what was done."""
    message = completion.message
    if message.tool_calls or not message.content:
        return completion
    cut_off = completion.finish_reason == "length"
    rest, calls = recover_text_calls(message.content, tools, cut_off=cut_off)
    if not calls:
        return completion
    names = ", ".join(c.name for c in calls)
    notes = [f"{plural(len(calls), 'tool call')} written as text ({names})"]
    notes += [f"the arguments of {c.name} ({', '.join(c.repairs[1:])})"
              for c in calls if len(c.repairs) > 1]
    new_message = Message(role="assistant", content=rest, tool_calls=tuple(calls))
    reason = completion.finish_reason if cut_off else "tool_calls"
    return replace(completion, message=new_message, finish_reason=reason,
                   notes=completion.notes + tuple(notes))


REPAIR_NOTE_START = "[note: this call was repaired before it ran: "  # the result's first line


def repair_note(call: ToolCall) -> str | None:
    """The line that tells the model what was fixed in its arguments before the call ran, if
    anything. That a call was written as text is left out: the model's chat template decides
    that, so telling the model would cost tokens and change nothing."""
    fixed = [r for r in call.repairs if r != WRITTEN_AS_TEXT]
    if not fixed:
        return None
    return f"{REPAIR_NOTE_START}{', '.join(fixed)}]"
