"""What every concrete provider shares: retries with backoff, repair, overflow and empty replies.

A concrete provider implements `_attempt(request)`: one HTTP call that yields TextChunks and a
raw Completion, raising `Transient` for failures worth retrying, `ContextOverflowError` for an
overflow the server reported as an error, and any other `ProviderError` for the rest.
`StreamingProvider.stream` wraps it:

1. text passes through a `TextGate` (textgate.py): it streams live, except what could be a
   tool call written as text, which is held until the reply is complete and repaired; then
   whatever of it is still in the repaired content is yielded just before the Completion, so
   the yielded text always adds up to the final content and recovered calls are never shown;
2. transient failures (connection errors, 429, 5xx, the time limits, a stream that drops or
   sends garbage) are retried `retries` times, waiting what the server's `Retry-After` asks
   (capped at `retry_after_max`) or else an exponential backoff with jitter. When the failed
   attempt had already yielded text (held text does not count), a `Restart` item goes out
   first, saying why, the wait and the attempt ("The reply was cut: server error (HTTP 503),
   retrying in 2.0 s (attempt 2 of 4)."): the consumer knows whether that text reached a
   person (only the REPL shows streamed text) and marks it as superseded; the retry then
   streams the reply from its start;
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

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from swival.errors import (
    EmptyResponseError,
    ProviderUnreachable,
    TransientProviderError,
)
from swival.providers.base import (
    ChatRequest,
    Completion,
    ProviderInfo,
    Restart,
    StreamItem,
    TextChunk,
)
from swival.providers.overflow import classify_overflow
from swival.providers.repair import repair_completion
from swival.providers.textgate import TextGate


class Transient(Exception):
    """A failure worth retrying. Its message is a short phrase for a person ("server error
    (HTTP 503)", "the connection dropped"), never an exception's class name; `detail` is
    what the server said about it, when it said something. `refused` marks a connection
    nobody accepted; `retry_after` is the wait the server asked for, in seconds, when it
    said."""

    def __init__(self, message: str, *, detail: str = "", refused: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.detail = detail
        self.refused = refused
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    """`retries` extra attempts. Waits `backoff`, 2x, 4x... (at most `max_wait`), each drawn
    within +/-`jitter` of that, so clients that failed together do not retry together. A
    server's Retry-After is honoured instead, plus up to `jitter` more, never past
    `retry_after_max`."""

    retries: int = 3
    backoff: float = 0.5
    max_wait: float = 8.0
    retry_after_max: float = 60.0
    jitter: float = 0.25
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def wait(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            asked = retry_after * (1 + self.jitter * self.rng.random())
            return min(asked, self.retry_after_max)
        nominal = min(self.max_wait, self.backoff * (2**attempt))
        return nominal * (1 + self.jitter * (2 * self.rng.random() - 1))


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
            gate = TextGate(request.tools, keep_leading=request.continues)
            completion = None
            for item in self._with_retries(request, gate):
                if isinstance(item, Completion):
                    completion = item
                else:
                    yield item
            assert completion is not None
            completion = repair_completion(completion, request.tools)
            overflow = classify_overflow(request, self.info.window.tokens, completion=completion)
            if overflow is not None:
                raise overflow
            if completion.message.content.strip() or completion.message.tool_calls:
                rest, completion = gate.settle(completion)
                if rest:
                    yield TextChunk(rest)
                yield completion
                return
            if completion.finish_reason == "length":  # asking again would end the same way
                raise EmptyResponseError(
                    f"The model ({self.info.model}) reached the output limit "
                    f"({request.max_output_tokens} tokens a reply) before writing any reply: "
                    "thinking models spend it on reasoning first. Raise --max-output-tokens, "
                    "or lower the model's reasoning effort on the server.")
        raise EmptyResponseError(
            f"The model ({self.info.model}) returned an empty reply twice. Try again, or try a "
            "larger model; small models sometimes stop at once on long prompts."
        )

    def _with_retries(self, request: ChatRequest, gate: TextGate) -> Iterator[StreamItem]:
        """Run `_attempt` with retries, yielding the text `gate` lets through and the raw
        Completion."""
        last: Transient | None = None
        for attempt in range(self.policy.retries + 1):
            gate.restart()  # a failed attempt's text is dropped (and superseded, if shown)
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
                    raise ProviderUnreachable(self._unreachable()) from None
                last = exc
                if attempt == self.policy.retries:
                    break
                wait = self.policy.wait(attempt, exc.retry_after)
                what = "The reply was cut" if yielded else "No reply yet"
                yield Restart(f"{what}: {exc}, retrying in {wait:.1f} s "
                              f"(attempt {attempt + 2} of {self.policy.retries + 1}).")
            time.sleep(wait)
        assert last is not None  # every attempt failed, so the loop saw at least one
        said = f' Details: "{last.detail.rstrip(". ")}".' if last.detail else ""
        raise TransientProviderError(
            f"{self._place()} kept failing after {self.policy.retries + 1} attempts; the last "
            f"failure: {last}.{said} {self._failing_advice()} The `retries` setting says how "
            "often Swival retries."
        )

    def _place(self) -> str:
        """The server, as the messages about it name it."""
        return self.info.base_url

    def _unreachable(self) -> str:
        """What a person is told when nothing accepted the first connection."""
        return unreachable_message(self.info.provider, self.info.base_url)

    def _failing_advice(self) -> str:
        """What to do when failures persisted through the retries."""
        return ("Check that the server is healthy (not overloaded or out of memory), then "
                "try again.")
