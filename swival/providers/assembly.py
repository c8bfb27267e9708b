"""One stream assembler for every transport: wire pieces in, one `Completion` out.

The OpenAI-compatible SSE transport, Ollama's NDJSON transport and the litellm path for hosted
providers each decode their own wire format and hand the pieces to a `StreamAssembly`:

- `text(piece)`: reply text; a `<think>...</think>` block at its start is reasoning, not
  reply (thinking.py), so `text` returns what may be shown and `flush()` whatever of the
  start it still held when the reply ends (the transport yields both);
- `tool_delta(index, id, name, arguments)`: a fragment of a streamed tool call (OpenAI style:
  the id and name arrive once, the argument text in pieces, all keyed by `index`);
- `tool_call(id, name, arguments)`: a whole call at once (Ollama), arguments as text or object;
- `thinking()`: reasoning the server streams separately (not part of the reply, but progress);
- `finish(reason)`, `usage(...)`, `cached(n)`: how the reply ended, and its token figures;
- `done()`: the server's end mark (`[DONE]`, Ollama's `done: true`); nothing follows it.

`progress` counts every piece that belongs to the reply, so a transport can tell a reply that
is still being generated from a connection that only trickles keep-alive bytes.

`completion()` parses each call's argument text once (repair.py), marks a call cut by the output
limit (finish reason `length`) as an error instead of completing it, and records what was
repaired both on the call (for the model) and in `Completion.notes` (for the user).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from swival.messages import Message, ToolCall, Usage
from swival.providers.base import Completion
from swival.providers.jsonfix import parse_arguments
from swival.providers.repair import new_call_id
from swival.providers.thinking import ThinkStrip

_SURROGATE = re.compile("[\ud800-\udfff]")


def _paired(text: str) -> str:
    """Argument text in which a character outside the BMP came as two escaped UTF-16 halves
    in separate chunks (`"\\ud83d"`, then `"\\ude00"`): each adjacent pair joined into
    that character; a half without its partner stays (and is reported when the call runs)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


@dataclass
class _Draft:
    id: str = ""
    name: str = ""
    pieces: list[str] = field(default_factory=list)
    whole: Mapping[str, Any] | None = None  # arguments sent as an object (Ollama)


@dataclass
class StreamAssembly:
    """Collects one reply's pieces; see the module docstring."""

    progress: int = 0
    ended: bool = False  # the server's end mark arrived
    finish_reason: str | None = None
    _text: list[str] = field(default_factory=list)
    _drafts: dict[int, _Draft] = field(default_factory=dict)
    _usage: tuple[int, int] | None = None
    _cached: int | None = None
    _think: ThinkStrip = field(default_factory=ThinkStrip)
    _thought: bool = False  # reasoning arrived apart from the text

    @property
    def finished(self) -> bool:
        """The server said the reply is complete (a finish reason or its end mark)."""
        return self.ended or self.finish_reason is not None

    @property
    def has_content(self) -> bool:
        """Anything of the reply arrived, reasoning included (so a stream that drops while
        the model thinks is a cut reply, not an empty one)."""
        return bool(self._text or self._drafts or self._thought or self._think.thought)

    def text(self, piece: str) -> str:
        """Add a piece of reply text; return the part of it that is answer, to show."""
        if not piece:
            return ""
        self.progress += 1
        shown = self._think.feed(piece)
        if shown:
            self._text.append(shown)
        return shown

    def flush(self) -> str:
        """The reply ended: answer text still held back (see `text`), to show."""
        rest = self._think.flush()
        if rest:
            self._text.append(rest)
        return rest

    def thinking(self, piece: str) -> None:
        if piece:
            self._thought = True
            self.progress += 1

    def tool_delta(self, index: Any, call_id: Any, name: Any, arguments: Any) -> None:
        """A fragment of call `index`. Without an index (some servers leave it out), a
        fragment goes on with the last call unless it starts another: a new id, or a name
        when the last call already has one and neither fragment has an id."""
        key = index if isinstance(index, int) else self._unindexed(call_id, name)
        draft = self._drafts.setdefault(key, _Draft())
        draft.id = draft.id or (str(call_id) if call_id else "")
        draft.name = draft.name or (str(name) if name else "")
        if isinstance(arguments, Mapping):
            draft.whole = arguments
        elif arguments:
            draft.pieces.append(str(arguments))
        self.progress += 1

    def _unindexed(self, call_id: Any, name: Any) -> int:
        """The key of an index-less fragment (see `tool_delta`)."""
        if not self._drafts:
            return 0
        key = max(self._drafts)
        last = self._drafts[key]
        if (call_id and str(call_id) != last.id) or (name and not call_id and last.name
                                                     and not last.id):
            return key + 1
        return key

    def tool_call(self, call_id: str | None, name: str, arguments: Any) -> None:
        draft = _Draft(call_id or "", name)
        if isinstance(arguments, Mapping):
            draft.whole = arguments
        elif arguments is not None:
            draft.pieces.append(str(arguments))
        self._drafts[len(self._drafts)] = draft
        self.progress += 1

    def finish(self, reason: str | None) -> None:
        if reason:
            self.finish_reason = str(reason)
            self.progress += 1

    def done(self) -> None:
        self.ended = True
        self.progress += 1

    def usage(self, prompt: Any, completion: Any) -> None:
        """Token figures; a reply without a positive prompt count has none."""
        if isinstance(prompt, int) and prompt > 0:
            self._usage = (prompt, completion if isinstance(completion, int) else 0)
            self.progress += 1

    def cached(self, tokens: Any) -> None:
        """How many prompt tokens the server reused from its cache, when it says."""
        if isinstance(tokens, int) and tokens >= 0:
            self._cached = tokens

    def completion(self) -> Completion:
        """The assembled reply; tool-call arguments parsed and repaired here, once."""
        cut = self.finish_reason == "length"
        calls: list[ToolCall] = []
        notes: list[str] = []
        drafts = sorted(self._drafts.items())
        for position, (_, draft) in enumerate(drafts):
            raw = draft.whole if draft.whole is not None else _paired("".join(draft.pieces))
            parsed = parse_arguments(raw, cut_off=cut and position == len(drafts) - 1)
            if parsed.repairs:
                notes.append(f"the arguments of {draft.name or 'a tool call'} "
                             f"({', '.join(parsed.repairs)})")
            calls.append(ToolCall(draft.id or new_call_id(), draft.name, parsed.value,
                                  parsed.error, parsed.repairs))
        reason = self.finish_reason
        if calls and reason in (None, "stop"):
            reason = "tool_calls"  # Ollama says "stop" for a reply that called tools
        message = Message(role="assistant", content="".join(self._text), tool_calls=tuple(calls))
        usage = Usage(*self._usage, self._cached) if self._usage is not None else None
        return Completion(message, usage, reason, tuple(notes))
