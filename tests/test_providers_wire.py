"""The direct httpx transport on the wire, against the loopback fake: SSE framing (comments,
reasoning, [DONE], error events), cached-token figures, the two time limits (a keep-alive
trickle ends, slow prompt processing and a slow steady stream do not), Retry-After honoured
and capped, and backoff waits measured from the server's own request timestamps."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import pytest

from swival.config import Settings
from swival.errors import ContextOverflowError, ProviderError, TransientProviderError
from swival.messages import Message
from swival.providers.base import ChatRequest, Completion, Provider, Restart
from swival.providers.factory import connect
from swival.providers.jsonfix import CUT_OFF_ERROR
from swival.providers.replies import retry_after
from swival.providers.streaming import RetryPolicy
from tests.evidence import record
from tests.fakeserver import FakeServer, Reply, error, text

Make = Callable[..., FakeServer]
FAST = RetryPolicy(retries=2, backoff=0.001)
WRITE = [{"type": "function", "function": {
    "name": "write_file", "description": "Write a file",
    "parameters": {"type": "object", "properties": {"file_path": {"type": "string"},
                                                    "content": {"type": "string"}}}}}]


def provider_for(server: FakeServer, policy: RetryPolicy = FAST, **kw: Any) -> Provider:
    return connect(Settings(provider=server.kind, base_url=server.url, **kw), policy)


def ask(content: str = "hi", tools: list[dict[str, Any]] | None = None) -> ChatRequest:
    return ChatRequest([Message("user", content)], tools=tools or [])


def collect(provider: Provider, request: ChatRequest) -> tuple[list[Any], Completion]:
    items = list(provider.stream(request))
    assert isinstance(items[-1], Completion)
    return items[:-1], items[-1]


def sse(payload: Any) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    return sse({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


# -- framing --------------------------------------------------------------------------------

def test_comments_reasoning_usage_and_done(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio")
    server.script(Reply(raw=(
        ": keep-alive\n\n",
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "The user greets me."}),
        "event: ping\n\n",
        chunk({"content": "Hel"}), chunk({"content": "lo."}),
        chunk({}, "stop"),
        sse({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 2,
                                      "prompt_tokens_details": {"cached_tokens": 24}}}),
        "data: [DONE]\n\n",
        "data: {this is after the end and never read\n\n",
    )))
    items, done = collect(provider_for(server), ask())
    assert "".join(i.text for i in items) == "Hello." and done.message.content == "Hello."
    assert done.finish_reason == "stop"
    assert done.usage is not None and (done.usage.prompt_tokens, done.usage.cached_tokens) == (
        30, 24)
    assert len(server.requests) == 1


def test_llamacpp_timings_give_the_cached_prompt_tokens(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(raw=(
        chunk({"content": "ok"}),
        chunk({}, "stop", usage={"prompt_tokens": 900, "completion_tokens": 1},
              timings={"cache_n": 850, "prompt_n": 50}),
        "data: [DONE]\n\n")))
    _, done = collect(provider_for(server), ask())
    assert done.usage is not None and done.usage.cached_tokens == 850


def test_done_without_a_finish_reason_is_a_complete_reply(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(raw=(chunk({"content": "all here"}), "data: [DONE]\n\n")))
    _, done = collect(provider_for(server), ask())
    assert done.message.content == "all here" and len(server.requests) == 1


def test_server_error_event_mid_stream_is_retried(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(raw=(sse({"error": {"code": 500, "message": "slot crashed",
                                            "type": "server_error"}}),)),
                  text("second time lucky"))
    _, done = collect(provider_for(server), ask())
    assert done.message.content == "second time lucky" and len(server.requests) == 2


def test_llamacpp_error_line_that_is_not_transient_is_reported(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(raw=('error: {"code": 400, "message": "invalid grammar", '
                             '"type": "invalid_request_error"}\n\n',)))
    with pytest.raises(ProviderError, match="invalid grammar"):
        collect(provider_for(server), ask())
    assert len(server.requests) == 1


def test_overflow_reported_inside_the_stream(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp", window=4096)
    server.script(Reply(raw=(sse({"error": {
        "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 5000,
        "n_ctx": 4096, "message": "the request exceeds the available context size"}}),)))
    with pytest.raises(ContextOverflowError) as err:
        collect(provider_for(server), ask())
    assert (err.value.prompt_tokens, err.value.window) == (5000, 4096)


def test_api_key_is_sent_as_a_bearer_token(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(text("a"))
    collect(provider_for(server, api_key="sk-local-secret"), ask())
    assert server.auth == ["Bearer sk-local-secret"]


def test_arguments_cut_by_the_output_limit_are_never_completed(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp", window=8192)
    cut = '{"file_path": "app.py", "content": "def main():\\n    print(\\"hel'
    server.script(Reply(tool_calls=(("write_file", cut),), finish_reason="length",
                        usage=(300, 1024)))
    _, done = collect(provider_for(server), ask(tools=WRITE))
    (call,) = done.message.tool_calls
    assert call.name == "write_file" and call.arguments_error == CUT_OFF_ERROR
    assert done.finish_reason == "length"


def test_same_arguments_without_the_limit_are_not_closed_either(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(tool_calls=(("write_file", '{"file_path": "a", "content": "de'),)))
    _, done = collect(provider_for(server), ask(tools=WRITE))
    error_text = done.message.tool_calls[0].arguments_error
    assert error_text is not None and "ends inside a string" in error_text


# -- time limits ----------------------------------------------------------------------------

def test_keepalive_trickle_mid_reply_ends_at_the_idle_limit(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(text="a reply that stalls halfway", mode="trickle", hang=30),
                  text("the whole reply"))
    started = time.monotonic()
    items, done = collect(provider_for(server, idle_timeout=1, request_timeout=20), ask())
    record("hang", "a server trickling keep-alive bytes mid-reply", "in-process",
           hung=time.monotonic() - started >= 10)
    assert time.monotonic() - started < 10
    restart = [i for i in items if isinstance(i, Restart)]
    assert len(restart) == 1 and "idle_timeout" in restart[0].reason
    assert done.message.content == "the whole reply"
    assert server.disconnects >= 1


def test_keepalive_trickle_before_any_content_ends_at_the_request_timeout(
        fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(mode="trickle", hang=30), text("ok"))
    started = time.monotonic()
    _, done = collect(provider_for(server, request_timeout=1, idle_timeout=60), ask())
    record("hang", "a server trickling keep-alive bytes before any content", "in-process",
           hung=time.monotonic() - started >= 10)
    assert time.monotonic() - started < 10
    assert done.message.content == "ok" and len(server.requests) == 2


def test_silent_server_fails_with_the_limit_named(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(mode="hang", hang=30))
    started = time.monotonic()
    provider = provider_for(server, RetryPolicy(retries=0), request_timeout=1)
    with pytest.raises(TransientProviderError, match="request_timeout"):
        collect(provider, ask())
    assert time.monotonic() - started < 10


def test_slow_prompt_processing_is_not_cut_by_the_idle_limit(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(text="worth the wait", mode="hang", hang=2.0))
    _, done = collect(provider_for(server, idle_timeout=1, request_timeout=30), ask())
    assert done.message.content == "worth the wait" and len(server.requests) == 1


def test_slow_steady_stream_is_never_cut(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(text="one token at a time, slowly", chunk=3, delay=0.3))
    started = time.monotonic()
    items, done = collect(provider_for(server, idle_timeout=1, request_timeout=1), ask())
    assert time.monotonic() - started > 2.0  # longer than both limits, in steady steps
    assert done.message.content == "one token at a time, slowly"
    assert not [i for i in items if isinstance(i, Restart)] and len(server.requests) == 1


def test_ollama_stream_obeys_the_same_limits(fake_server: Make) -> None:
    server = fake_server(kind="ollama")
    server.script(Reply(mode="hang", hang=30), text("fine"))
    started = time.monotonic()
    _, done = collect(provider_for(server, request_timeout=1), ask())
    assert time.monotonic() - started < 10 and done.message.content == "fine"


# -- waits between attempts ---------------------------------------------------------------

def gaps(server: FakeServer) -> list[float]:
    return [b - a for a, b in zip(server.times, server.times[1:], strict=False)]


def test_retry_after_is_honoured(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio")
    server.script(error(429, "slow down", retry_after="1"), text("ok"))
    _, done = collect(provider_for(server), ask())  # backoff alone would wait 1 ms
    assert done.message.content == "ok"
    assert 1.0 <= gaps(server)[0] < 3.0


def test_retry_after_is_capped(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio")
    server.script(error(503, "loading", retry_after="3600"), text("ok"))
    started = time.monotonic()
    _, done = collect(provider_for(server, RetryPolicy(retries=1, retry_after_max=0.5)), ask())
    assert done.message.content == "ok" and time.monotonic() - started < 5
    assert 0.5 <= gaps(server)[0] < 2.0


def test_retry_after_as_an_http_date() -> None:
    now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(datetime(2025, 3, 1, 12, 0, 30, tzinfo=UTC), usegmt=True)
    assert retry_after(later, now=now.timestamp) == pytest.approx(30.0)
    assert retry_after("7") == 7.0
    # Not a delay a server may send: the usual backoff applies (nan waited nothing at all).
    for odd in ("nan", "inf", "-5", "1e400", "0x10", "1_000", "soon"):
        assert retry_after(odd) is None, odd
    assert retry_after(" 2.5 ") == 2.5
    assert retry_after("soon") is None and retry_after(None) is None


def test_backoff_grows_with_jitter_inside_its_bounds() -> None:
    policy = RetryPolicy(backoff=0.5, max_wait=8.0, rng=random.Random(7))
    for attempt, nominal in enumerate((0.5, 1.0, 2.0, 4.0, 8.0, 8.0)):
        waits = {policy.wait(attempt) for _ in range(50)}
        assert all(0.75 * nominal <= w <= 1.25 * nominal for w in waits)
        assert len(waits) > 40  # drawn, not fixed
