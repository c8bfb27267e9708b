"""An in-process provider for tests: replays scripted replies and records every request.

`ScriptedProvider` implements the `Provider` protocol from swival/providers/base.py, so the
real agent, context engine and tools run against it unchanged; nothing is monkey-patched.

    provider = ScriptedProvider([
        call("read_file", file_path="a.py"),          # the model asks for a tool
        reply("Done.", usage=(120, 8)),               # then answers
    ])
    ...run the agent...
    assert provider.requests[1].messages[-1].role == "tool"

Each script item is one of:
- a `Reply` (build it with `reply(...)`, `call(...)` or `calls(...)`);
- a `Completion`, sent as is (its text streamed first);
- an exception instance, raised when the request arrives (e.g. `ContextOverflowError(...)`);
- a callable taking the `ChatRequest` and returning any of the above, so the fake model can
  react to what it was sent.

When the script runs out, the provider raises `ScriptExhausted` naming the request number, so a
test that makes more calls than it scripted fails loudly instead of hanging.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from swival.messages import Message, ToolCall, Usage
from swival.providers.base import (
    ChatRequest,
    Completion,
    ProviderInfo,
    StreamItem,
    TextChunk,
    WindowInfo,
)


class ScriptExhausted(AssertionError):
    """The code under test made more model calls than the test scripted."""


@dataclass(frozen=True)
class Reply:
    """One scripted model reply: visible text, tool calls, usage and how to stream it.

    `chunk` is the size of each streamed text piece; `delay` seconds are slept before the
    first chunk (a slow model, for spinners and Ctrl-C tests); `gate`, when set, is waited on
    before the first chunk so a test can hold the model "thinking" as long as it likes.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    chunk: int = 8
    delay: float = 0.0
    gate: threading.Event | None = None
    notes: tuple[str, ...] = ()


ScriptItem = Reply | Completion | BaseException | Callable[[ChatRequest], Any]

_ids = itertools.count(1)


def reply(text: str = "", *, usage: tuple[int, int] | None = None, **kw: Any) -> Reply:
    """A plain text answer. `usage` is (prompt_tokens, completion_tokens)."""
    return Reply(text=text, usage=Usage(*usage) if usage else None, **kw)


def call(name: str, /, *, say: str = "", usage: tuple[int, int] | None = None,
         **arguments: Any) -> Reply:
    """A reply asking for one tool call with the given arguments (any name, `text`
    included, is a tool argument); `say` is visible text sent along with the call."""
    return calls((name, arguments), text=say, usage=usage)


def calls(*wanted: tuple[str, Mapping[str, Any]], text: str = "",
          usage: tuple[int, int] | None = None) -> Reply:
    """A reply asking for several tool calls at once: `calls(("grep", {...}), ...)`."""
    made = tuple(ToolCall(id=f"call_{next(_ids)}", name=n, arguments=dict(a)) for n, a in wanted)
    return Reply(text=text, tool_calls=made, usage=Usage(*usage) if usage else None)


@dataclass
class ScriptedProvider:
    """A `Provider` that answers from a script and keeps every `ChatRequest` it received.

    `window` sets `info.window` (None for an unknown window). Thread-safe enough for a
    background thread driving the agent while the test thread inspects `requests`.
    """

    script: Iterable[ScriptItem] = ()
    window: int | None = 8192
    model: str = "scripted-model"
    requests: list[ChatRequest] = field(default_factory=list)
    info: ProviderInfo = field(init=False)

    def __post_init__(self) -> None:
        source = "scripted" if self.window is not None else "scripted provider reports none"
        self.info = ProviderInfo(
            provider="scripted", base_url="scripted://", model=self.model,
            window=WindowInfo(self.window, source),
        )
        self._queue: list[ScriptItem] = list(self.script)
        self._lock = threading.Lock()

    def add(self, *items: ScriptItem) -> None:
        """Append more replies to the script (e.g. between REPL turns)."""
        with self._lock:
            self._queue.extend(items)

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def stream(self, request: ChatRequest) -> Iterator[StreamItem]:
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            if not self._queue:
                raise ScriptExhausted(f"model call #{number} was not scripted")
            item = self._queue.pop(0)
        while callable(item) and not isinstance(item, BaseException | Reply | Completion):
            item = item(request)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Completion):
            yield from _chunks(item.message.content, 8)
            yield item
            return
        yield from _play(item)


def _chunks(text: str, size: int) -> Iterator[TextChunk]:
    for start in range(0, len(text), max(1, size)):
        yield TextChunk(text[start:start + size])


def _play(item: Reply) -> Iterator[StreamItem]:
    if item.gate is not None:
        item.gate.wait()
    if item.delay:
        threading.Event().wait(item.delay)
    yield from _chunks(item.text, item.chunk)
    message = Message("assistant", item.text, tool_calls=item.tool_calls)
    finish = item.finish_reason or ("tool_calls" if item.tool_calls else "stop")
    yield Completion(message, usage=item.usage, finish_reason=finish, notes=item.notes)
