"""The values the engine's callers hand it and get back."""

from __future__ import annotations

from dataclasses import dataclass

from swival.events import Compacted
from swival.messages import Message


@dataclass(frozen=True)
class ContextSettings:
    window: int  # tokens to budget on (the real window, or 8192 when unknown)
    max_output_tokens: int = 32768
    tool_result_share: float = 0.2
    compaction_trigger: float = 0.85
    compaction_target: float = 0.55
    proactive_summaries: bool = False
    counts_include_cache: bool = True  # the server's prompt counts cover cached tokens
    # A window the server itself said it runs (llama.cpp's n_ctx, LM Studio's loaded
    # length; 0: none): no silent cut is ever learned below it.
    confirmed_window: int = 0
    interactive: bool = True  # a REPL session (False: one-shot, no slash commands)


@dataclass(frozen=True)
class Prepared:
    messages: tuple[Message, ...]  # exactly what to send (system first)
    max_output_tokens: int  # what fits in the window, at most the configured limit
    estimated_tokens: int  # calibrated count of messages + tool schemas
    events: tuple[Compacted, ...]  # compactions this call caused
    room_limited: bool = False  # the window's room, not max_output_tokens, set the limit


@dataclass(frozen=True)
class ContextUsage:
    """What /context shows. The parts are Swival's own count (cl100k), which stays the
    same while they do; `counted` is their total. `used` is that total as the server
    counts it (our count times `factor`, learned from its replies): what compaction
    and the reply's room act on. Then the budget's figures, where the emergency drop
    begins, and what compaction has cost the server's cache so far."""

    system: int
    tools: int
    pinned: int
    user: int
    assistant: int
    tool_results: int
    counted: int
    used: int
    factor: float
    window: int
    input_budget: int
    output_reserve: int
    trigger: int
    target: int
    emergency: int  # from this prompt size a drop asks the model for no recap
    compactions: int  # this session
    reprocessed: int  # tokens the server computed again because of them

    @property
    def free(self) -> int:
        return max(0, self.input_budget - self.used)
