"""What every concrete provider shares: retries with backoff, repair, overflow and empty replies.

A concrete provider implements `_attempt(request)`: one HTTP call that yields TextChunks and a
raw Completion, raising `Transient` for failures worth retrying, `ContextOverflowError` for an
overflow the server reported as an error, and any other `ProviderError` for the rest.
`StreamingProvider.stream` wraps it:

1. text passes through a `TextGate` (textgate.py): it streams live, except what could be a
   tool call written as text, which is held until the reply is complete and repaired; then
   whatever of it is still in the repaired content is yielded just before the Completion, so
   the yielded text always adds up to the final content and recovered calls are never shown;
2. transient failures (connection errors, 429, 5xx, timeouts) are retried `retries` times with
   exponential backoff, but only while nothing has been yielded (held text does not count):
   text already shown cannot be taken back, so a connection that drops mid-reply ends in
   TransientProviderError at once;
3. a connection refused before any call ever succeeded is ProviderUnreachable, not retried
   (the server is simply not running);
4. the finished Completion is repaired (tool calls written as text, broken JSON arguments);
5. `classify_overflow` turns a reply that hides an overflow into ContextOverflowError;
6. an empty reply (no text, no tool calls, no overflow) is asked for once more, then
   EmptyResponseError.

KeyboardInterrupt is never caught here: `_attempt` closes its connection in a `finally` and
the interrupt propagates at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from swival.errors import (
    EmptyResponseError,
    ProviderUnreachable,
    TransientProviderError,
)
from swival.providers.base import ChatRequest, ProviderInfo, StreamItem, TextChunk
from swival.providers.overflow import classify_overflow
from swival.providers.repair import repair_completion
from swival.providers.textgate import TextGate


class Transient(Exception):
    """A failure worth retrying. `refused` marks a connection nobody accepted."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True)
class RetryPolicy:
    """`retries` extra attempts; waits `backoff`, 2x`backoff`, 4x... capped at `max_wait`."""

    retries: int = 3
    backoff: float = 0.5
    max_wait: float = 8.0

    def wait(self, attempt: int) -> float:
        return float(min(self.max_wait, self.backoff * (2**attempt)))


def unreachable_message(provider: str, url: str) -> str:
    """One paragraph naming the URL and what to start."""
    what = {
        "lmstudio": "Start LM Studio, load a model and enable its local server",
        "ollama": "Start Ollama (`ollama serve`)",
        "llamacpp": "Start llama-server (e.g. `llama-server -m model.gguf -c 16384 --jinja`)",
    }.get(provider, "Start your OpenAI-compatible server")
    return (
        f"Nothing answers at {url} ({provider}). {what}, or point Swival "
        "elsewhere with --base-url / --provider (lmstudio, ollama, llamacpp, generic)."
    )


class StreamingProvider:
    """Base class implementing `Provider.stream` on top of `_attempt`."""

    counts_include_cache = True  # does the server's prompt count include KV-cached tokens?

    def __init__(self, info: ProviderInfo, policy: RetryPolicy) -> None:
        self.info = info
        self.policy = policy
        self._succeeded = False

    def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
        raise NotImplementedError

    def stream(self, request: ChatRequest) -> Iterator[StreamItem]:
        """See `Provider.stream`; the steps are in the module docstring."""
        for _ in range(2):
            gate = TextGate(request.tools)
            completion = None
            for item in self._with_retries(request, gate):
                if isinstance(item, TextChunk):
                    yield item
                else:
                    completion = item
            assert completion is not None
            completion = repair_completion(completion, request.tools)
            overflow = classify_overflow(
                request, self.info.window.tokens, completion=completion,
                counts_include_cache=self.counts_include_cache,
            )
            if overflow is not None:
                raise overflow
            if completion.message.content.strip() or completion.message.tool_calls:
                rest, completion = gate.settle(completion)
                if rest:
                    yield TextChunk(rest)
                yield completion
                return
        raise EmptyResponseError(
            f"The model ({self.info.model}) returned an empty reply twice. Try again, or try a "
            "larger model; small models sometimes stop at once on long prompts."
        )

    def _with_retries(self, request: ChatRequest, gate: TextGate) -> Iterator[StreamItem]:
        """Run `_attempt` with retries, yielding the text `gate` lets through and the raw
        Completion."""
        last = ""
        for attempt in range(self.policy.retries + 1):
            gate.restart()  # a failed attempt's held text is dropped, never shown
            yielded = False
            try:
                for item in self._attempt(request):
                    if isinstance(item, TextChunk):
                        item = TextChunk(gate.feed(item.text))
                        if not item.text:
                            continue
                    yielded = True
                    yield item
                self._succeeded = True
                return
            except Transient as exc:
                if exc.refused and not self._succeeded:
                    raise ProviderUnreachable(
                        unreachable_message(self.info.provider, self.info.base_url)
                    ) from None
                if yielded:
                    raise TransientProviderError(
                        f"The connection to {self.info.base_url} dropped in the middle of a "
                        f"reply ({exc}). Check the server, then ask again."
                    ) from None
                last = str(exc)
            if attempt < self.policy.retries:
                time.sleep(self.policy.wait(attempt))
        raise TransientProviderError(
            f"{self.info.base_url} kept failing after {self.policy.retries + 1} attempts "
            f"({last}). Check that the server is healthy (not overloaded or out of memory), "
            "then try again; the `retries` setting says how often Swival retries."
        )
