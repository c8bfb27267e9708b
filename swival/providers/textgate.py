"""Hold back streamed text that may be a tool call written as text, until repair has decided.

Small models often write their tool calls into the reply text; repair.py recovers them from
the finished reply and removes them from its content. Streamed as it arrives, that JSON or XML
would reach the screen before it is recognised. `TextGate` sits between a provider's raw
chunks and the caller:

- text streams through live up to the first place where a text-written call could begin: one
  of `repair.TEXT_CALL_MARKERS`, or the start of one split across chunks (a trailing "<tool");
- a candidate shown not to be a call is released and the scan goes on after it: a "{" not
  followed by a double quote (repair decodes bare objects as strict JSON only), a complete JSON
  object holding no call, a fence whose info string or first character rules out a call
  (```python, ``` followed by prose) or whose closed block holds no call, a `<function=name>`
  naming no known tool. Anything else (an unfinished object, a `<tool_call>` tag, a known
  function, a real call) holds everything after it until the reply ends;
- whitespace at the end of the shown part is held, and whitespace at the very start of the
  reply is never shown, because repair strips the text around the calls it removes; except
  in a reply that continues one the output limit cut (`keep_leading`), whose text is joined
  to the cut one as written: there it is shown with the first text after it;
- `settle` takes the repaired Completion and returns the rest of its content after the text
  already shown. Recovered calls are never shown, and the shown text plus that rest is exactly
  the final content (whose leading whitespace `settle` drops, as repair already does whenever it
  recovers a call; a continuation keeps it unless repair dropped it).

Why this is safe: every span repair removes starts at a marker, and the gate never shows text
from a marker onwards unless that marker cannot start a removed span. So what was shown is
always a prefix of the repaired content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from swival.providers.base import Completion
from swival.providers.repair import FENCE_BLOCK, TEXT_CALL_MARKERS, recover_text_calls, tool_names

_FENCE_HEAD = re.compile(r"```(\w*)(\s*)")
_FENCE_WORDS = ("", "json", "tool_call", "tool")  # the info strings repair's fence accepts
_FUNCTION_HEAD = re.compile(r"<function=([\w.-]*)")
_LONGEST_MARKER = max(len(m) for m in TEXT_CALL_MARKERS)


@dataclass(frozen=True)
class _Verdict:
    """What a candidate marker turned out to be. `resume`: where scanning goes on (release)."""

    kind: str  # "release", "pending" (cannot tell yet), "waiting" (pending until its
    # closing character comes) or "block" (hold to the end)
    resume: int = 0


_PENDING = _Verdict("pending")
_WAITING = _Verdict("waiting")
_BLOCK = _Verdict("block")


def _next_marker(text: str, start: int) -> int | None:
    hits = [i for i in (text.find(m, start) for m in TEXT_CALL_MARKERS) if i >= 0]
    return min(hits) if hits else None


def _partial_marker(text: str, start: int) -> int:
    """Where a trailing piece that could still grow into a marker begins (len(text) if none)."""
    for i in range(max(start, len(text) - _LONGEST_MARKER + 1), len(text)):
        tail = text[i:]
        if any(m.startswith(tail) and m != tail for m in TEXT_CALL_MARKERS):
            return i
    return len(text)


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


class TextGate:
    """Decides, chunk by chunk, how much of a streamed reply may be shown.

    `tools` are the request's tool schemas; with none, repair recovers nothing and the gate
    lets everything through untouched.
    """

    def __init__(self, tools: Sequence[Mapping[str, Any]], *, keep_leading: bool = False) -> None:
        self._tools = tools
        self._keep_leading = keep_leading
        self._names = tool_names(tools)
        self.restart()

    def restart(self) -> None:
        """Forget the current attempt's text (call only while nothing has been shown)."""
        self._text = ""
        self._start = 0  # the shown text is _text[_start:_end]
        self._end = 0
        self._scan = 0  # every candidate before this one was released
        self._blocked = False
        self._limit = 0  # how far the last scan let the text be shown, before trimming
        self._trimmed = 0  # _text[:_limit].rstrip() ends here
        self._pending = (-1, 0)  # the candidate last judged "waiting", and len(_text) then

    @property
    def shown(self) -> str:
        """The text handed out so far in this attempt."""
        return self._text[self._start:self._end]

    def feed(self, chunk: str) -> str:
        """Add a streamed chunk; return the text that may be shown now ("" for none)."""
        self._text += chunk
        if not self._names:
            self._end = len(self._text)
            return chunk
        if self._blocked:
            return ""
        end = self._safe_end()
        if end <= self._end:
            return ""
        if self._end == 0 and not self._keep_leading:
            # the first text shown: leave out the reply's leading whitespace
            self._start = self._end = len(self._text) - len(self._text.lstrip())
        shown, self._end = self._text[self._end:end], end
        return shown

    def settle(self, completion: Completion) -> tuple[str, Completion]:
        """Given the repaired completion, return (text still to show, final completion)."""
        if not self._names:
            return "", completion
        content, shown = completion.message.content, self.shown
        trimmed = content if self._keep_leading else content.lstrip()
        if not trimmed.startswith(shown):  # a continuation whose calls repair recovered
            trimmed, shown = content.lstrip(), shown.lstrip()
        if not trimmed.startswith(shown):
            # Unreachable while every removed span starts at a marker (module docstring);
            # never repeat or invent text: the content stays as repair left it.
            return "", completion
        if trimmed != content:
            completion = replace(completion, message=replace(completion.message, content=trimmed))
        return trimmed[len(shown):], completion

    def _safe_end(self) -> int:
        """Move the scan past released candidates; return how far the text may be shown."""
        text = self._text
        while True:
            if self._undecided(self._scan):  # still the first candidate: no search
                found, verdict = self._scan, _WAITING
            else:
                marker = _next_marker(text, self._scan)
                if marker is None:
                    # no marker starts before the limit, so the next chunk scans on from it
                    limit = self._scan = _partial_marker(text, self._scan)
                    break
                found = marker
                verdict = self._judge(found)
                if verdict.kind == "waiting":
                    self._pending = (found, len(text))
            if verdict.kind == "release":
                self._scan = verdict.resume
                continue
            self._blocked = verdict.kind == "block"
            self._scan, limit = found, found
            break
        return max(self._end, self._trim(limit))

    def _trim(self, limit: int) -> int:
        """`len(self._text[:limit].rstrip())`, looking only at the text since the last
        limit, so a long reply costs time in proportion to its length, not its square."""
        if limit < self._limit:  # not expected (limits only grow), but stay exact
            self._limit = self._trimmed = 0
        kept = self._text[self._limit:limit].rstrip()
        if kept:
            self._trimmed = self._limit + len(kept)
        self._limit = limit
        return self._trimmed

    def _undecided(self, at: int) -> bool:
        """Whether the object or fence at `at`, waiting when last judged, must still be: no
        character that could close it arrived since, or too little text to be worth parsing
        it all again (past 4 KB each new judgment waits for an eighth more, so a long call
        written as text costs time in proportion to its length). Judging later is always safe:
        pending text is held, and the reply's end settles everything."""
        where, then = self._pending
        text = self._text
        closer = "}" if text.startswith("{", at) else "`" if text.startswith("```", at) else ""
        if where != at or not closer:
            return False
        if closer not in text[then:]:
            return True
        return then - at > 4096 and len(text) - then < (then - at) // 8

    def _judge(self, at: int) -> _Verdict:
        text = self._text
        if text.startswith("{", at):
            return self._judge_object(at)
        if text.startswith("```", at):
            return self._judge_fence(at)
        if text.startswith("<function=", at):
            head = _FUNCTION_HEAD.match(text, at)
            assert head is not None
            if head.end() == len(text):
                return _PENDING
            if text[head.end()] != ">" or head.group(1) not in self._names:
                return _Verdict("release", at + 1)
        return _BLOCK  # a known function, or a <tool_call> / </tool_call> tag

    def _judge_object(self, at: int) -> _Verdict:
        text = self._text
        first = _skip_space(text, at + 1)
        if first == len(text):
            return _PENDING
        if text[first] != '"':  # not strict JSON with a key: repair will not decode it
            return _Verdict("release", at + 1)
        try:
            _, end = json.JSONDecoder().raw_decode(text, at)
        except (ValueError, RecursionError):  # too deep, or a number too long to convert
            return _WAITING  # unfinished (or broken: then it is shown when the reply ends)
        return _BLOCK if self._holds_call(text[at:end]) else _Verdict("release", end)

    def _judge_fence(self, at: int) -> _Verdict:
        text = self._text
        head = _FENCE_HEAD.match(text, at)
        assert head is not None
        if head.end() == len(text):
            return _PENDING
        word, space = head.group(1), head.group(2)
        if word not in _FENCE_WORDS or "\n" not in space or text[head.end()] != "{":
            return _Verdict("release", at + 1)  # "````" may hide a fence one character on
        block = FENCE_BLOCK.match(text, at)
        if block is None:
            return _WAITING
        return _BLOCK if self._holds_call(text[at:block.end()]) else _Verdict("release",
                                                                                block.end())

    def _holds_call(self, fragment: str) -> bool:
        """True when the fragment holds a call, or a tag repair strips once any call is found."""
        if "<tool_call>" in fragment or "</tool_call>" in fragment:
            return True
        return bool(recover_text_calls(fragment, self._tools)[1])
