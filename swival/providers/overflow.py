"""Recognise every way a model server says (or hides) that the prompt did not fit.

`classify_overflow` is the one place that decides. It looks at either the text of a failed
call (an HTTP error body or an exception message) or a finished `Completion`, and returns a
`ContextOverflowError` (with `kind`, and the server's `prompt_tokens` / `window` when it gave
them) or None.

Shapes and their `kind`:

- ``rejected``  llama.cpp's 400 ``exceed_context_size_error`` (n_prompt_tokens, n_ctx), LM
  Studio's 400 mentioning the context length, OpenAI's ``context_length_exceeded`` / "maximum
  context length is N tokens", Ollama's "exceeds the context length" and similar texts.
- ``empty``     HTTP 200 with an empty stream (LM Studio does this on overflow): no text, no tool
  calls, and our own estimate at >= 80 % of the window. Our estimate uses a different tokenizer
  from the server's, so the threshold is deliberately loose; an empty reply far from the window
  is an ordinary empty reply (retried once by the provider, then EmptyResponseError).
- ``length``    ``finish_reason == "length"`` with prompt + output at >= 97 % of the window
  (llama.cpp answers 200 this way when the prompt fits but the reply cannot), or, when the
  window is unknown, stopped for length before reaching ``max_output_tokens``.

Silent truncation (a server that cuts the prompt and says nothing, as Ollama does) is
not judged here: it shows only in the prompt size a server reports, compared with what
the context engine expected, so the engine judges it from every reply's usage, by one
rule (swival/context/calibration.py).

A ``finish_reason == "length"`` reply whose *prompt* holds under half of the window is a
runaway reply, not a full context: compaction would not help, so it is returned as a normal
(cut) reply.
"""

from __future__ import annotations

import re

from swival.errors import ContextOverflowError
from swival.providers.base import ChatRequest, Completion

PINNED_SHARE = 0.97  # prompt and reply at this share of the window: the window is full
EMPTY_SHARE = 0.80  # an empty reply with our estimate above this share is an overflow
RUNAWAY_PROMPT_SHARE = 0.5  # a length stop with a prompt under this share is a runaway reply

_OVERFLOW_TEXTS = (
    "exceed_context_size_error",
    "exceeds the available context size",
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "context size",
    "prompt is too long",
    "too many tokens",
    "contextwindowexceeded",
)
_NUMBER_PATTERNS_PROMPT = (
    r"""["']?n_prompt_tokens["']?\s*[:=]\s*(\d+)""",
    r"resulted in (\d+) tokens",
    r"requested (\d+) tokens",
    r"keep the first (\d+) tokens",
    r"prompt(?: has| of)? (\d+) tokens",
)
_NUMBER_PATTERNS_WINDOW = (
    r"""["']?n_ctx["']?\s*[:=]\s*(\d+)""",
    r"maximum context length is (\d+)",
    r"context length of (?:only )?(\d+)",
    r"context (?:size|window|length) (?:is |of )?(\d+)",
)


def _first_int(text: str, patterns: tuple[str, ...]) -> int | None:
    for pattern in patterns:
        match = re.search(pattern, text, flags=re.IGNORECASE)
        if match:
            return int(match.group(1))
    return None


def _from_error_text(text: str) -> ContextOverflowError | None:
    low = text.lower()
    if not any(marker in low for marker in _OVERFLOW_TEXTS):
        return None
    prompt = _first_int(text, _NUMBER_PATTERNS_PROMPT)
    window = _first_int(text, _NUMBER_PATTERNS_WINDOW)
    figures = ""
    if prompt is not None and window is not None:
        figures = f" ({prompt} prompt tokens, window {window})"
    elif window is not None:
        figures = f" (window {window})"
    return ContextOverflowError(
        f"The server rejected the prompt as too long for its context window{figures}.",
        kind="rejected",
        prompt_tokens=prompt,
        window=window,
    )


def _is_empty(completion: Completion) -> bool:
    return not completion.message.content.strip() and not completion.message.tool_calls


def _from_completion(
    request: ChatRequest, window: int | None, completion: Completion
) -> ContextOverflowError | None:
    usage = completion.usage
    reported = usage.prompt_tokens if usage is not None and usage.prompt_tokens > 0 else None
    estimate = request.estimated_prompt_tokens

    if completion.finish_reason == "length" and usage is not None:
        total = usage.prompt_tokens + usage.completion_tokens
        if (window is not None and total >= PINNED_SHARE * window
                and usage.prompt_tokens >= RUNAWAY_PROMPT_SHARE * window):
            return ContextOverflowError(
                f"The context window is full: prompt and reply reached {total} of {window} "
                "tokens before the reply was finished.",
                kind="length", prompt_tokens=reported, window=window,
            )
        if window is None and 0 < usage.completion_tokens < request.max_output_tokens:
            return ContextOverflowError(
                f"The reply stopped for length after {usage.completion_tokens} tokens, short "
                f"of the {request.max_output_tokens} allowed: the context window is full.",
                kind="length", prompt_tokens=reported, window=total or None,
            )
    if window is None:
        return None
    if _is_empty(completion) and estimate >= EMPTY_SHARE * window:
        return ContextOverflowError(
            f"The server sent an empty reply to a prompt of about {estimate} tokens in a "
            f"{window}-token window: it most likely did not fit.",
            kind="empty", prompt_tokens=reported, window=window,
        )
    return None


def classify_overflow(
    request: ChatRequest,
    window: int | None,
    *,
    error_text: str | None = None,
    completion: Completion | None = None,
) -> ContextOverflowError | None:
    """Return the overflow that `error_text` or `completion` shows, or None.

    Give exactly one of `error_text` (the body or message of a failed call) and `completion`
    (a reply the server sent). `window` is the window the provider believes in (None when
    unknown); the server's own figures, when present, take precedence in the error.
    """
    if error_text is not None:
        return _from_error_text(error_text)
    if completion is not None:
        return _from_completion(request, window, completion)
    return None
