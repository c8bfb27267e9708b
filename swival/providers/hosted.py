"""Hosted providers (OpenRouter, OpenAI, Anthropic, Gemini, ...) through litellm.

Only a hosted model string (no `--base-url`) comes here; local servers are reached directly
(openai_compat.py, ollama.py), so they never pay litellm's import (seconds, ~170 MB).

litellm is imported on the first need (connect, for the window of a hosted model; or the
first call), always with `LITELLM_LOCAL_MODEL_COST_MAP=True` so it never fetches its price
map, and with its own logging and "Give Feedback" banners silenced. Calls always stream, ask
for a final usage chunk, pass `_skip_mcp_handler=True` (litellm 1.106 otherwise needs the `mcp`
package whenever tools are sent) and disable litellm's and the OpenAI client's own retries:
retries are ours (streaming.py), so each one is counted and bounded. Chunks go through the same
stream assembler as the direct transports (`absorb_chunk`).

The offline price map gives the window of a hosted model the user did not size
(`hosted_window`) and the cost of its calls (`HostedProvider.cost`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from swival.errors import ProviderError
from swival.messages import Usage
from swival.providers.assembly import StreamAssembly
from swival.providers.base import ChatRequest, ProviderInfo, StreamItem, TextChunk, WindowInfo
from swival.providers.openai_compat import absorb_chunk, chat_body
from swival.providers.overflow import classify_overflow
from swival.providers.streaming import RetryPolicy, StreamingProvider, Transient
from swival.providers.wire import retry_after, short

PRICE_SOURCE = "litellm's bundled price map"


def import_litellm() -> ModuleType:
    """Import litellm offline and quiet. Safe to call from several threads."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # never fetch the remote price map
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.drop_params = True  # a provider that lacks an option should not fail the call
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm


def hosted_window(model: str) -> WindowInfo:
    """The input window litellm's offline model map gives for `model`, or unknown."""
    try:
        info = import_litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises its own types for unmapped models
        info = {}
    tokens = info.get("max_input_tokens") or info.get("max_tokens")
    if isinstance(tokens, int) and tokens > 0:
        return WindowInfo(tokens, f"{PRICE_SOURCE}, max_input_tokens")
    return WindowInfo(None, f"{model} is not in {PRICE_SOURCE}; pass --max-context-tokens")


@dataclass(frozen=True)
class CallConfig:
    """How to call: the litellm model string, the API base (None: litellm knows the
    provider's URL), the key (None: litellm reads the provider's variable) and the timeout."""

    litellm_model: str
    api_base: str | None
    api_key: str | None
    timeout: float


def _close(stream: Any) -> None:
    inner = getattr(stream, "completion_stream", None)
    for obj in (inner, getattr(inner, "response", None)):
        close = getattr(obj, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # best effort on the way out
                close()


def _as_dict(chunk: Any) -> Mapping[str, Any]:
    dump = getattr(chunk, "model_dump", None)
    data = dump() if callable(dump) else chunk
    return data if isinstance(data, Mapping) else {}


class HostedProvider(StreamingProvider):
    """Streams chat completions from a hosted provider via litellm."""

    def __init__(self, info: ProviderInfo, policy: RetryPolicy, call: CallConfig) -> None:
        super().__init__(info, policy)
        self.call = call
        self.spent_usd: float | None = 0.0  # every call so far; None once one is unpriced
        self._lock = threading.Lock()  # recap calls may run in a background thread

    def warm(self) -> None:
        import_litellm()

    def cost(self, usage: Usage) -> float | None:
        """What `usage` costs in US dollars by the offline price map, or None if unpriced."""
        try:
            prompt, completion = import_litellm().cost_per_token(
                model=self.call.litellm_model, prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens)
        except Exception:  # noqa: BLE001 - unmapped model: no price
            return None
        return float(prompt) + float(completion)

    def _account(self, usage: Usage | None) -> None:
        if usage is None:
            return
        price = self.cost(usage)
        with self._lock:
            self.spent_usd = None if price is None or self.spent_usd is None else (
                self.spent_usd + price)

    def _kwargs(self, request: ChatRequest) -> dict[str, Any]:
        kwargs = chat_body(self.call.litellm_model, request)
        kwargs.update(timeout=self.call.timeout, max_retries=0, num_retries=0,
                      _skip_mcp_handler=True)
        if self.call.api_base is not None:
            kwargs["api_base"] = self.call.api_base
        if self.call.api_key:
            kwargs["api_key"] = self.call.api_key
        return kwargs

    def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
        litellm = import_litellm()
        try:
            stream = litellm.completion(**self._kwargs(request))
        except Exception as exc:  # noqa: BLE001 - every failure is mapped below
            raise self._map_error(request, exc) from None
        assembly = StreamAssembly()
        try:
            for chunk in stream:
                text = absorb_chunk(_as_dict(chunk), assembly)
                if text:
                    yield TextChunk(text)
        except Exception as exc:  # noqa: BLE001
            raise self._map_error(request, exc) from None
        finally:
            _close(stream)
        if not _server_finished(stream, assembly) and assembly.has_content:
            raise Transient("the stream ended before the reply was complete")
        completion = assembly.completion()
        self._account(completion.usage)
        yield completion

    def _map_error(self, request: ChatRequest, exc: Exception) -> Exception:
        text = _error_text(exc)
        overflow = classify_overflow(request, self.info.window.tokens, error_text=text)
        if overflow is not None:
            return overflow
        if _refused(exc):
            return Transient(short(text), refused=True)
        status = getattr(exc, "status_code", None)
        if status is None or type(exc).__name__ in ("APIConnectionError", "Timeout"):
            return Transient(short(text))
        if status == 429 or status >= 500:
            return Transient(f"HTTP {status}: {short(str(exc))}", retry_after=_retry_after(exc))
        if status in (401, 403):
            return ProviderError(
                f"{self.info.provider} refused the API key (HTTP {status}). Set the provider's "
                "API-key variable (e.g. OPENAI_API_KEY, OPENROUTER_API_KEY) or --api-key."
            )
        if status == 404:
            return ProviderError(
                f"{self.info.provider} has no model {self.info.model!r} (HTTP 404). Check "
                "--model against the provider's model list."
            )
        return ProviderError(f"The provider rejected the request (HTTP {status}): {short(text)}")


def _retry_after(exc: BaseException) -> float | None:
    """The Retry-After of the HTTP reply behind a litellm error, when it kept one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers",
                                                             None)
    try:
        return retry_after(headers.get("retry-after")) if headers is not None else None
    except AttributeError:
        return None


def _server_finished(stream: Any, assembly: StreamAssembly) -> bool:
    """Did the provider itself send a finish reason? litellm adds a synthetic "stop" to a
    stream that ended without one, so ask its wrapper what it really received (an internal
    attribute: when a litellm release lacks it, the chunks are trusted)."""
    if not assembly.finished:
        return False
    received = getattr(stream, "received_finish_reason", "absent")
    return received is not None or getattr(stream, "intermittent_finish_reason", None) is not None


def _error_text(exc: BaseException) -> str:
    """Everything the exception chain says, so the server's own error body is included
    (litellm's top-level message drops fields such as llama.cpp's n_prompt_tokens)."""
    parts: list[str] = []
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            break
        parts.append(f"{type(seen).__name__}: {seen}")
        body = getattr(seen, "body", None)
        if body:
            parts.append(json.dumps(body, default=str))
        seen = seen.__cause__ or seen.__context__
    return " | ".join(parts)


def _refused(exc: BaseException) -> bool:
    """True when, somewhere down the cause chain, a TCP connection was refused."""
    seen: BaseException | None = exc
    for _ in range(12):
        if seen is None:
            return False
        if type(seen).__name__ in ("ConnectError", "ConnectionRefusedError"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
