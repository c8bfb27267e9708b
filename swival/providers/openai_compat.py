"""OpenAI-compatible servers (LM Studio, llama.cpp, any generic server, hosted providers)
through litellm.

litellm is imported on the first call (or earlier by `factory.warm_up` in a background
thread), always with `LITELLM_LOCAL_MODEL_COST_MAP=True` so it never fetches its price map, and
with its own logging and "Give Feedback" banners silenced. Calls always stream, ask for a final
usage chunk, pass `_skip_mcp_handler=True` (litellm 1.106 otherwise needs the `mcp` package
whenever tools are sent) and disable litellm's and the OpenAI client's own retries: retries
are ours (streaming.py), so each one is counted and bounded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from swival.errors import ProviderError
from swival.messages import Message, ToolCall, Usage
from swival.providers.base import ChatRequest, Completion, ProviderInfo, StreamItem, TextChunk
from swival.providers.overflow import classify_overflow
from swival.providers.repair import parse_arguments
from swival.providers.streaming import RetryPolicy, StreamingProvider, Transient

LOCAL_API_KEY = "sk-local"  # the OpenAI client insists on some key; local servers ignore it


def import_litellm() -> ModuleType:
    """Import litellm offline and quiet. Safe to call from several threads."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # never fetch the remote price map
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.drop_params = True  # a server that lacks an option should not fail the call
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm


@dataclass(frozen=True)
class CallConfig:
    """How to call: the litellm model string, API base (None for hosted), key and timeout."""

    litellm_model: str
    api_base: str | None
    api_key: str | None
    timeout: float


@dataclass
class _ToolDraft:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _Assembly:
    """Collects streamed deltas: text, tool calls by index, finish reason and usage."""

    text: list[str] = field(default_factory=list)
    tools: dict[int, _ToolDraft] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None

    def add_tool_delta(self, delta: Any) -> None:
        index = getattr(delta, "index", None)
        draft = self.tools.setdefault(index if index is not None else len(self.tools),
                                      _ToolDraft())
        draft.id = draft.id or (getattr(delta, "id", None) or "")
        fn = getattr(delta, "function", None)
        if fn is not None:
            draft.name = draft.name or (getattr(fn, "name", None) or "")
            draft.arguments += getattr(fn, "arguments", None) or ""

    def completion(self) -> Completion:
        calls, notes = [], []
        for i, draft in sorted(self.tools.items()):
            parsed = parse_arguments(draft.arguments)
            if parsed.repairs:
                notes.append(f"repaired JSON arguments of {draft.name} "
                             f"({', '.join(dict.fromkeys(parsed.repairs))})")
            calls.append(ToolCall(draft.id or f"call_{i}", draft.name, parsed.value,
                                  parsed.error))
        message = Message(role="assistant", content="".join(self.text), tool_calls=tuple(calls))
        return Completion(message, self.usage, self.finish_reason, tuple(notes))


def _usage(raw: Any) -> Usage | None:
    if raw is None or not getattr(raw, "prompt_tokens", None):
        return None
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(int(raw.prompt_tokens), int(getattr(raw, "completion_tokens", 0) or 0),
                 int(cached) if cached is not None else None)


def _close(stream: Any) -> None:
    inner = getattr(stream, "completion_stream", None)
    for obj in (inner, getattr(inner, "response", None)):
        close = getattr(obj, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # best effort on the way out
                close()


class OpenAICompatProvider(StreamingProvider):
    """Streams chat completions from an OpenAI-compatible server via litellm.

    `litellm_model` is the litellm model string (`openai/<name>` for a local server, the
    user's string for a hosted one); `api_base` is None for hosted providers (litellm knows
    their URLs and reads their API-key variables itself).
    """

    def __init__(self, info: ProviderInfo, policy: RetryPolicy, call: CallConfig) -> None:
        super().__init__(info, policy)
        self.call = call

    def _kwargs(self, request: ChatRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.call.litellm_model,
            "messages": [m.to_dict() for m in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": request.max_output_tokens,
            "timeout": self.call.timeout,
            "max_retries": 0,
            "num_retries": 0,
            "_skip_mcp_handler": True,
        }
        if request.tools:
            kwargs["tools"] = [dict(t) for t in request.tools]
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if self.call.api_base is not None:
            kwargs["api_base"] = self.call.api_base
        key = self.call.api_key or (LOCAL_API_KEY if self.call.api_base else None)
        if key:
            kwargs["api_key"] = key
        return kwargs

    def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
        litellm = import_litellm()
        try:
            stream = litellm.completion(**self._kwargs(request))
        except Exception as exc:  # noqa: BLE001 - every failure is mapped below
            raise self._map_error(request, exc) from None
        assembly = _Assembly()
        try:
            for chunk in stream:
                text = self._absorb(assembly, chunk)
                if text:
                    yield TextChunk(text)
        except Exception as exc:  # noqa: BLE001
            raise self._map_error(request, exc) from None
        finally:
            _close(stream)
        if not _server_finished(stream, assembly) and (assembly.text or assembly.tools):
            raise Transient("the stream ended before the reply was complete")
        yield assembly.completion()

    @staticmethod
    def _absorb(assembly: _Assembly, chunk: Any) -> str:
        usage = _usage(getattr(chunk, "usage", None))
        if usage is not None:
            assembly.usage = usage
        choices = getattr(chunk, "choices", None) or ()
        if not choices:
            return ""
        choice = choices[0]
        if getattr(choice, "finish_reason", None):
            assembly.finish_reason = choice.finish_reason
        delta = getattr(choice, "delta", None)
        for tool_delta in getattr(delta, "tool_calls", None) or ():
            assembly.add_tool_delta(tool_delta)
        text = getattr(delta, "content", None) or ""
        if text:
            assembly.text.append(text)
        return text

    def _map_error(self, request: ChatRequest, exc: Exception) -> Exception:
        text = _error_text(exc)
        overflow = classify_overflow(request, self.info.window.tokens, error_text=text)
        if overflow is not None:
            return overflow
        if _refused(exc):
            return Transient(_short(text), refused=True)
        status = getattr(exc, "status_code", None)
        if status is None or type(exc).__name__ in ("APIConnectionError", "Timeout"):
            return Transient(_short(text))
        if status == 429 or status >= 500:
            return Transient(f"HTTP {status}: {_short(str(exc))}")
        if status in (401, 403):
            return ProviderError(
                f"{self.info.base_url} refused the API key (HTTP {status}). Set the provider's "
                "API-key variable (e.g. OPENAI_API_KEY, OPENROUTER_API_KEY) or --api-key."
            )
        if status == 404:
            return ProviderError(
                f"{self.info.base_url} has no model {self.info.model!r} (HTTP 404). Check "
                "--model against the models the server lists."
            )
        return ProviderError(f"The server rejected the request (HTTP {status}): {_short(text)}")


def _server_finished(stream: Any, assembly: _Assembly) -> bool:
    """Did the server itself send a finish reason? litellm adds a synthetic "stop" to a
    stream that ended without one, so ask its wrapper what it really received (an internal
    attribute: when a litellm release lacks it, the chunks are trusted)."""
    if assembly.finish_reason is None:
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


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
