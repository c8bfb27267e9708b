"""The provider protocol: what the agent needs from a model server."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from swival.messages import Message, Usage

UNKNOWN_WINDOW_BUDGET = 8192  # what we budget on when the server will not tell us its window


@dataclass(frozen=True)
class WindowInfo:
    """The context window the server really runs with, and where that figure came from.
    `confirmed`: the server itself reported running it (not a setting nor a guess)."""

    tokens: int | None
    source: str
    confirmed: bool = False

    @property
    def confirmed_tokens(self) -> int:
        """The window the server confirmed, or 0."""
        return (self.tokens or 0) if self.confirmed else 0

    @property
    def known(self) -> bool:
        return self.tokens is not None

    @property
    def budget_tokens(self) -> int:
        """The window to budget on: the real one, or a conservative 8192 when unknown."""
        return self.tokens if self.tokens is not None else UNKNOWN_WINDOW_BUDGET

    def describe(self) -> str:
        if self.tokens is None:
            return f"unknown (budgeting on {UNKNOWN_WINDOW_BUDGET}; {self.source})"
        return f"{self.tokens} tokens ({self.source})"


@dataclass(frozen=True)
class ProviderInfo:
    """What the start-up line, the doctor and `--json` show about the connection."""

    provider: str
    base_url: str
    model: str
    window: WindowInfo
    model_source: str = "configured"


@dataclass(frozen=True)
class ChatRequest:
    """One model call. `tools` are OpenAI function schemas. `estimated_prompt_tokens`
    is our own count, used to recognise a server that cut the prompt silently.
    `continues`: the reply goes on from one the output limit cut, so its text is joined
    to that one exactly as written (its leading whitespace included)."""

    messages: Sequence[Message]
    tools: Sequence[Mapping[str, Any]] = ()
    max_output_tokens: int = 1024
    estimated_prompt_tokens: int = 0
    temperature: float | None = None
    continues: bool = False


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class Completion:
    """The whole reply: always the last item a stream yields."""

    message: Message
    usage: Usage | None = None
    finish_reason: str | None = None
    notes: tuple[str, ...] = field(default=())  # what was repaired, e.g. "the arguments of
    # read_file (single quotes)"; shown to the user as "Repaired: ..."


@dataclass(frozen=True)
class Restart:
    """The reply failed and is being asked for again (after a wait the reason gives): the
    text chunks yielded before this item, if any, are void. `reason` says what happened,
    for a person, so a retry never passes in silence."""

    reason: str


StreamItem = TextChunk | Restart | Completion


class Provider(Protocol):
    info: ProviderInfo

    def stream(self, request: ChatRequest) -> Iterator[StreamItem]:
        """Yield visible text chunks as they arrive (text that may be a tool call written
        as text is held back until the reply is complete), then exactly one `Completion`;
        the chunks after the last `Restart` (if any) add up to the completion's content.

        Raises `ContextOverflowError` when the prompt did not fit (rejected or cut),
        `ProviderUnreachable`, `TransientProviderError` after retries, and lets
        KeyboardInterrupt through after closing the connection.
        """
        ...


def complete(provider: Provider, request: ChatRequest) -> Completion:
    """Run a request to the end and return only its completion."""
    for item in provider.stream(request):
        if isinstance(item, Completion):
            return item
    raise RuntimeError("provider stream ended without a completion")
