"""Tool-call arguments: strict JSON first, then a tolerant parse for what small models write.

`parse_arguments(raw, cut_off=...)` returns a `ParsedArguments`: the object, or an error the
model can act on, and `repairs` naming each fix. The tolerant parser reads the text once,
left to right, with an explicit stack (no recursion, so no nesting depth can crash it), and
accepts exactly these departures from JSON, each of which has one meaning:

    single quotes        {'file_path': 'a.py'}
    trailing comma       {"a": 1,}
    line break in string {"content": "line 1
                          line 2"}          (the break is kept as written)
    unquoted key         {file_path: "a.py"}
    missing comma        {"a": 1 "b": 2}
    text after           {"a": 1} I will now read it.
    fenced block         ```json\\n{"a": 1}\\n```
    invalid escape       {"pattern": "\\d+"}   (the backslash is kept: \\d stays \\d)
    Python literal       True, False, None
    unclosed brackets    {"a": 1            (only at the very end, outside any string)

Nothing is ever invented: an unquoted value, a key without a value, an unterminated string
or anything else ambiguous is an error naming the position. When the reply stopped at the
output limit (`cut_off`), arguments that are not complete are an error telling the model to
write smaller pieces: closing them would run a call the model never finished (a half-written
file). Why our own code and not a library: see docs/providers.md ("Argument repair").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 64  # tool arguments are a few levels deep; far deeper is garbage, not data
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_$][\w$-]*")
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}
_PY_LITERALS: dict[str, Any] = {"True": True, "False": False, "None": None}
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t", "'": "'"}
CUT_OFF_ERROR = (
    "The reply reached the output limit before the arguments of this call were complete, so "
    "it was not run. Do the work in smaller pieces: write a long file in several calls (create "
    "it with the first part, then add the rest with edit_file), or shorten what you send."
)


@dataclass(frozen=True)
class ParsedArguments:
    """The outcome of `parse_arguments`: the object, or an error; `repairs` says what was fixed."""

    value: dict[str, Any]
    error: str | None = None
    repairs: tuple[str, ...] = ()


class _Unfixable(Exception):
    """The text cannot be read without guessing; the message says where and why."""


@dataclass
class _Frame:
    container: dict[str, Any] | list[Any]
    state: str  # object: key, colon, value, comma; array: value, comma
    key: str = ""
    after_comma: bool = False


class _Reader:
    """One left-to-right pass over argument text (see the module docstring)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.repairs: list[str] = []

    def note(self, what: str) -> None:
        if what not in self.repairs:
            self.repairs.append(what)

    def fail(self, why: str) -> _Unfixable:
        return _Unfixable(f"{why} at character {self.pos + 1}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def string(self, quote: str) -> str:
        text, i = self.text, self.pos + 1
        out: list[str] = []
        if quote == "'":
            self.note("single quotes")
        while i < len(text):
            ch = text[i]
            if ch == quote:
                self.pos = i + 1
                return "".join(out)
            if ch == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                    continue
                if nxt in _ESCAPES and (nxt != "'" or quote == "'"):
                    out.append(_ESCAPES[nxt])
                else:
                    self.note("invalid escape")
                    out.append(ch + nxt)  # \d stays \d: the model meant the backslash
                i += 2
                continue
            if ch in "\n\r\t":
                self.note("line break in a string")
            out.append(ch)
            i += 1
        self.pos = len(text)
        raise _Cut("a string is not closed")

    def scalar(self) -> tuple[bool, Any]:
        """A number or literal at pos: (True, value), or (False, None) when there is none."""
        number = _NUMBER.match(self.text, self.pos)
        if number:
            raw = number.group(0)
            try:
                value = float(raw) if any(c in raw for c in ".eE") else int(raw)
            except ValueError:  # more digits than Python converts (4,300)
                raise self.fail("a number with too many digits") from None
            self.pos = number.end()
            return True, value
        word = _WORD.match(self.text, self.pos)
        if word and word.group(0) in _LITERALS:
            self.pos = word.end()
            return True, _LITERALS[word.group(0)]
        if word and word.group(0) in _PY_LITERALS:
            self.pos = word.end()
            self.note("Python literal")
            return True, _PY_LITERALS[word.group(0)]
        return False, None

    def bare_key(self) -> str | None:
        """An unquoted key: a word followed by a colon."""
        word = _WORD.match(self.text, self.pos)
        if word is None:
            return None
        after = word.end()
        while after < len(self.text) and self.text[after] in " \t":
            after += 1
        if after < len(self.text) and self.text[after] == ":":
            self.pos = word.end()
            self.note("unquoted key")
            return word.group(0)
        return None


class _Cut(_Unfixable):
    """The text ends inside a string: it was cut, never repaired."""


def _open(reader: _Reader, stack: list[_Frame], ch: str) -> _Frame:
    if len(stack) >= MAX_DEPTH:
        raise reader.fail(f"the arguments are nested deeper than {MAX_DEPTH} levels")
    reader.pos += 1
    frame = _Frame({}, "key") if ch == "{" else _Frame([], "value")
    stack.append(frame)
    return frame


def _store(stack: list[_Frame], value: Any) -> None:
    frame = stack[-1]
    if isinstance(frame.container, dict):
        frame.container[frame.key] = value
    else:
        frame.container.append(value)
    frame.state, frame.after_comma = "comma", False


def _value(reader: _Reader) -> Any:
    """Read a string, number or literal (containers are opened by the caller)."""
    ch = reader.text[reader.pos]
    if ch in "\"'":
        return reader.string(ch)
    found, value = reader.scalar()
    if not found:
        raise reader.fail("a value is not JSON (strings need quotes)")
    return value


def _punctuation(reader: _Reader, stack: list[_Frame], ch: str) -> bool:
    """Handle a closing bracket or a comma of the innermost container; False when `ch` is
    neither here."""
    frame = stack[-1]
    in_object = isinstance(frame.container, dict)
    closer, closable, after = ("}", ("key", "comma"), "key") if in_object else (
        "]", ("value", "comma"), "value")
    if ch == closer and frame.state in closable:
        if frame.after_comma:
            reader.note("trailing comma")
        reader.pos += 1
        _close(stack)
        return True
    if ch == "," and frame.state == "comma":
        reader.pos += 1
        frame.state, frame.after_comma = after, True
        return True
    return False


def _item(reader: _Reader, stack: list[_Frame], ch: str) -> None:
    """A value in an array, or a key, colon or value in an object."""
    frame = stack[-1]
    if frame.state == "colon":
        if ch != ":":
            raise reader.fail("a key is not followed by ':'")
        reader.pos += 1
        frame.state = "value"
        return
    if frame.state == "comma":  # an item where a comma belongs
        reader.note("missing comma")
    if frame.state == "value" or isinstance(frame.container, list):
        if ch in "{[":
            _open(reader, stack, ch)
        else:
            _store(stack, _value(reader))
        return
    if ch in "\"'":
        frame.key = reader.string(ch)
    else:
        key = reader.bare_key()
        if key is None:
            raise reader.fail("expected a key in double quotes")
        frame.key = key
    frame.state = "colon"


def _close(stack: list[_Frame]) -> None:
    done = stack.pop()
    if stack:
        _store(stack, done.container)
    else:
        stack.append(_Frame(done.container, "done"))


def _tolerant(text: str, cut_off: bool) -> tuple[dict[str, Any], list[str]]:
    reader = _Reader(text)
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rstrip().removesuffix("```")
        reader.note("fenced block")
    reader.text = body
    reader.skip_space()
    if not body.startswith("{"):
        raise reader.fail("the arguments must be one JSON object, starting with '{'")
    stack: list[_Frame] = []
    _open(reader, stack, "{")
    while stack[-1].state != "done":
        reader.skip_space()
        if reader.pos >= len(body):
            _close_at_end(reader, stack, cut_off)
            break
        ch = body[reader.pos]
        if not _punctuation(reader, stack, ch):
            _item(reader, stack, ch)
    reader.skip_space()
    if reader.pos < len(body):
        reader.note("text after the object")
    value = stack[-1].container
    assert isinstance(value, dict)
    return value, reader.repairs


def _close_at_end(reader: _Reader, stack: list[_Frame], cut_off: bool) -> None:
    """The text ended with containers open: close them only when nothing is half-written."""
    if cut_off:
        raise _Cut("the arguments end before the object is closed")
    inner = stack[-1]
    if inner.state != "comma" and not inner.after_comma:  # e.g. {"a":  or  {"a": [
        raise reader.fail("the arguments end in the middle of a value")
    reader.note("unclosed brackets")
    while stack[-1].state != "done":
        stack[-1].after_comma = False
        _close(stack)


def _depth(value: Any) -> int:
    """Nesting depth, without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            todo.extend((child, level + 1) for child in
                        (item.values() if isinstance(item, dict) else item))
    return deepest


def _error(why: str, raw: str) -> str:
    snippet = raw if len(raw) <= 120 else raw[:117] + "..."
    return (
        f"The arguments are not valid JSON ({why}): {snippet}. Send the arguments again as one "
        'JSON object with double-quoted keys and strings, e.g. {"file_path": "src/app.py"}.'
    )


def parse_arguments(raw: str | Mapping[str, Any] | None, *, cut_off: bool = False,
                    ) -> ParsedArguments:
    """Parse a tool call's argument text into an object, repairing it when unambiguous.

    `cut_off`: the reply stopped at the output limit right after this call, so arguments that
    are not complete become an error (CUT_OFF_ERROR) instead of being closed. Never raises.
    """
    if isinstance(raw, Mapping):
        return ParsedArguments(dict(raw))
    text = (raw or "").strip()
    if not text:
        return ParsedArguments({})
    repairs: list[str] = []
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        try:
            value, repairs = _tolerant(text, cut_off)
        except _Cut:
            return ParsedArguments({}, CUT_OFF_ERROR if cut_off else _error(
                "the text ends inside a string", text))
        except _Unfixable as exc:
            return ParsedArguments({}, _error(str(exc), text))
    if isinstance(value, str) and value.strip().startswith("{"):  # the object, encoded twice
        inner = parse_arguments(value)
        if inner.error is None:
            return ParsedArguments(inner.value, None,
                                   ("arguments sent as a JSON string", *repairs, *inner.repairs))
    if not isinstance(value, dict):
        kind = type(value).__name__
        return ParsedArguments({}, f"The arguments must be one JSON object, not a {kind}: "
                                   f"{text[:120]}. Send them as {{\"name\": value, ...}}.")
    if _depth(value) > MAX_DEPTH:
        return ParsedArguments({}, _error(f"nested deeper than {MAX_DEPTH} levels", text))
    return ParsedArguments(value, None, tuple(repairs))
