"""The values the engine's callers hand it and get back."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swival.context.summarize import Summarizer
from swival.context.tokens import TokenCounter
from swival.events import Compacted
from swival.messages import Message
from swival.redaction import Redactor


@dataclass(frozen=True)
class ContextSettings:
    window: int  # tokens to budget on (the real window, or 8192 when unknown)
    max_output_tokens: int = 32768
    tool_result_share: float = 0.2
    compaction_trigger: float = 0.85
    compaction_target: float = 0.6
    proactive_summaries: bool = False
    counts_include_cache: bool = True  # the server's prompt counts cover cached tokens


ExactCount = Callable[[Sequence[Message], Sequence[Mapping[str, Any]]], "int | None"]


@dataclass(frozen=True)
class Extras:
    """What the engine may have: `state_dir` (<project>/.swival: the transcript and
    saved outputs; None keeps everything in memory), the summarizer for recaps and
    checkpoints (a tool-free model call), a shared counter (tiktoken loads once), a
    fixed session id, the server's own count of a prompt (messages, tool schemas) where
    it offers one (llama.cpp's template and tokenizer), the redactor that keeps secrets
    out of the transcript and saved outputs, and who to tell when a new transcript file
    is created, and of the size and SHA-256 of what it holds after each record appended
    to it (the session index)."""

    state_dir: Path | None = None
    summarize: Summarizer | None = None
    counter: TokenCounter | None = None
    session_id: str | None = None
    exact: ExactCount | None = None
    redactor: Redactor | None = None
    on_transcript: Callable[[Path], None] | None = None
    on_seal: Callable[[Path, int, str], None] | None = None


@dataclass(frozen=True)
class Prepared:
    messages: tuple[Message, ...]  # exactly what to send (system first)
    max_output_tokens: int  # what fits in the window, at most the configured limit
    estimated_tokens: int  # calibrated count of messages + tool schemas
    events: tuple[Compacted, ...]  # compactions this call caused
    room_limited: bool = False  # the window's room, not max_output_tokens, set the limit


@dataclass(frozen=True)
class ContextUsage:
    """What /context shows: calibrated tokens per part, the budget's figures, and what
    compaction has cost the server's cache so far."""

    system: int
    tools: int
    pinned: int
    user: int
    assistant: int
    tool_results: int
    used: int
    window: int
    input_budget: int
    output_reserve: int
    trigger: int
    target: int
    compactions: int  # this session
    reprocessed: int  # tokens the server computed again because of them

    @property
    def free(self) -> int:
        return max(0, self.input_budget - self.used)
