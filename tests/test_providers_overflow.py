"""Every overflow shape becomes a ContextOverflowError with the server's figures; lookalikes
do not. Error bodies are the ones real servers send (llama.cpp, LM Studio, OpenAI, Ollama)."""

from __future__ import annotations

import json

import pytest

from swival.messages import Message, ToolCall, Usage
from swival.providers.base import ChatRequest, Completion
from swival.providers.overflow import classify_overflow


def request(estimate: int = 0, max_out: int = 1024) -> ChatRequest:
    return ChatRequest([Message("user", "hi")], estimated_prompt_tokens=estimate,
                       max_output_tokens=max_out)


def done(text: str = "ok", usage: tuple[int, int] | None = None, finish: str = "stop",
         calls: tuple[ToolCall, ...] = ()) -> Completion:
    u = Usage(*usage) if usage else None
    return Completion(Message("assistant", text, tool_calls=calls), u, finish)


LLAMACPP_400 = json.dumps({"error": {
    "code": 400, "message": "the request exceeds the available context size, try increasing it",
    "type": "exceed_context_size_error", "n_prompt_tokens": 14429, "n_ctx": 8192}})
LMSTUDIO_400 = ("Error: 400 Trying to keep the first 9120 tokens when context the overflows. "
                "However, the model is loaded with context length of only 4096 tokens, which "
                "is not enough. Try to load the model with a larger context length, or provide "
                "a shorter input")
OPENAI_400 = ("litellm.ContextWindowExceededError: Error code: 400 - {'error': {'message': "
              "\"This model's maximum context length is 8192 tokens. However, your messages "
              "resulted in 9001 tokens.\", 'type': 'invalid_request_error', "
              "'code': 'context_length_exceeded'}}")


@pytest.mark.parametrize(("text", "prompt", "window"), [
    (LLAMACPP_400, 14429, 8192),
    (LMSTUDIO_400, 9120, 4096),
    (OPENAI_400, 9001, 8192),
    ("input length exceeds the context length", None, None),
])
def test_rejections_carry_the_servers_figures(text: str, prompt: int | None,
                                              window: int | None) -> None:
    err = classify_overflow(request(), 8192, error_text=text)
    assert err is not None and err.kind == "rejected"
    assert (err.prompt_tokens, err.window) == (prompt, window)


@pytest.mark.parametrize("text", [
    "Error code: 500 - internal error", "model 'x' not found", "rate limit exceeded",
])
def test_other_errors_are_not_overflows(text: str) -> None:
    assert classify_overflow(request(), 8192, error_text=text) is None


def test_empty_stream_near_the_window_is_an_overflow() -> None:
    err = classify_overflow(request(estimate=7000), 8192, completion=done("", finish=""))
    assert err is not None and err.kind == "empty" and err.window == 8192


def test_empty_reply_far_from_the_window_is_just_empty() -> None:
    assert classify_overflow(request(estimate=900), 8192, completion=done("")) is None


def test_length_stop_at_the_window_is_a_full_context() -> None:
    # llama.cpp: HTTP 200, finish_reason "length", prompt + output == n_ctx.
    err = classify_overflow(request(estimate=7800), 8192,
                            completion=done("partial", (7900, 292), "length"))
    assert err is not None and err.kind == "length" and err.prompt_tokens == 7900


def test_length_stop_at_max_output_is_a_normal_reply() -> None:
    reply = done("long answer", (1000, 1024), "length")
    assert classify_overflow(request(estimate=1000, max_out=1024), 8192, completion=reply) is None


def test_length_stop_short_of_max_output_with_unknown_window() -> None:
    err = classify_overflow(request(max_out=4096), None,
                            completion=done("cut", (3900, 196), "length"))
    assert err is not None and err.kind == "length" and err.window == 4096


@pytest.mark.parametrize(("estimate", "reported"), [(6000, 4090), (5000, 1500), (6000, 2000)])
def test_a_reply_is_never_judged_cut_here(estimate: int, reported: int) -> None:
    """Pinned at the window, far below our estimate: silent truncation shows only in the
    figures, and the context engine judges those (calibration.py), by one rule."""
    reply = done("ok", (reported, 10))
    assert classify_overflow(request(estimate=estimate), 4096, completion=reply) is None


def test_template_that_drops_tool_schemas_is_not_truncation() -> None:
    # Seen live: SmolLM2 on llama.cpp reports 32 prompt tokens for ~1138 with tool schemas.
    assert classify_overflow(request(estimate=1138), 8192,
                             completion=done("Paris.", (32, 8))) is None


def test_runaway_reply_filling_the_window_is_not_an_overflow() -> None:
    reply = done("la la la", (1100, 7092), "length")
    assert classify_overflow(request(estimate=1138, max_out=7054), 8192,
                             completion=reply) is None


def test_count_close_to_estimate_is_fine() -> None:
    # Tokenizers differ: 4500 reported for our 6000 is within the tolerance.
    assert classify_overflow(request(estimate=6000), 8192,
                             completion=done("ok", (4500, 10))) is None


def test_unknown_window_never_guesses_truncation() -> None:
    assert classify_overflow(request(estimate=60000), None, completion=done("ok", (10, 1))) \
        is None
