"""Ollama through its native chat API (`POST /api/chat`, streamed NDJSON).

Why native and why httpx directly rather than litellm's `ollama_chat` route: the one thing
that matters with Ollama is `options.num_ctx` — the OpenAI-compatible endpoint cannot set it,
and a value that changes between requests makes Ollama reload the model. Talking to
`/api/chat` ourselves makes that guarantee visible in one line (`_body`), keeps the exact
usage figures Ollama reports (`prompt_eval_count`, `eval_count`, `done_reason`) instead of a
translation of them, and spares an Ollama session litellm's multi-second import. httpx comes
with litellm, so it adds no dependency.

Every request sends the same `num_ctx`: the configured or detected window fixed at connect.
Ollama's `prompt_eval_count` counts only the tokens it had to evaluate (a KV-cache hit
excludes the reused prefix), so overflow classification runs with `counts_include_cache=False`
(see overflow.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx

from swival.errors import ModelNotFound, ProviderError
from swival.messages import Message, ToolCall, Usage
from swival.providers.base import ChatRequest, Completion, ProviderInfo, StreamItem, TextChunk
from swival.providers.overflow import classify_overflow
from swival.providers.repair import parse_arguments
from swival.providers.streaming import RetryPolicy, StreamingProvider, Transient


def _wire_message(message: Message) -> dict[str, Any]:
    """Ollama's message form: tool-call arguments are objects, tool results name the tool."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": dict(c.arguments)}}
            for c in message.tool_calls
        ]
    if message.role == "tool" and message.name:
        out["tool_name"] = message.name
    return out


class OllamaProvider(StreamingProvider):
    """Streams `/api/chat` replies, sending `num_ctx` (fixed for the session) every time."""

    counts_include_cache = False

    def __init__(
        self, info: ProviderInfo, policy: RetryPolicy, num_ctx: int, timeout: float = 600.0
    ) -> None:
        super().__init__(info, policy)
        self.num_ctx = num_ctx
        self.timeout = timeout

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        options: dict[str, Any] = {
            "num_ctx": self.num_ctx,
            "num_predict": request.max_output_tokens,
        }
        if request.temperature is not None:
            options["temperature"] = request.temperature
        body: dict[str, Any] = {
            "model": self.info.model,
            "messages": [_wire_message(m) for m in request.messages],
            "stream": True,
            "options": options,
        }
        if request.tools:
            body["tools"] = [dict(t) for t in request.tools]
        return body

    def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
        url = self.info.base_url.rstrip("/") + "/api/chat"
        timeout = httpx.Timeout(self.timeout, connect=5.0)
        try:
            with httpx.Client(timeout=timeout) as client, client.stream(
                "POST", url, json=self._body(request)
            ) as response:
                if response.status_code != 200:
                    raise self._http_error(request, response.status_code, response.read())
                yield from self._read(response)
        except httpx.ConnectError as exc:
            raise Transient(f"cannot connect to {url} ({exc})", refused=True) from None
        except (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise Transient(f"{type(exc).__name__}: {exc}") from None

    def _read(self, response: httpx.Response) -> Iterator[StreamItem]:
        text: list[str] = []
        calls: list[ToolCall] = []
        notes: list[str] = []
        for line in response.iter_lines():
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                raise Transient(f"Ollama sent a line that is not JSON: {line[:120]}") from None
            if data.get("error"):
                raise ProviderError(f"Ollama reported an error: {data['error']}")
            message = data.get("message") or {}
            piece = message.get("content") or ""
            if piece:
                text.append(piece)
                yield TextChunk(piece)
            for raw in message.get("tool_calls") or ():
                fn = raw.get("function") or {}
                parsed = parse_arguments(fn.get("arguments"))
                if parsed.repairs:
                    notes.append(f"repaired JSON arguments of {fn.get('name')}")
                calls.append(ToolCall(raw.get("id") or "call_" + uuid.uuid4().hex[:12],
                                      str(fn.get("name", "")), parsed.value, parsed.error))
            if data.get("done"):
                usage = Usage(int(data.get("prompt_eval_count") or 0),
                              int(data.get("eval_count") or 0))
                reason = "tool_calls" if calls else data.get("done_reason")
                msg = Message(role="assistant", content="".join(text), tool_calls=tuple(calls))
                yield Completion(msg, usage, reason, tuple(notes))
                return
        raise Transient("the Ollama stream ended before its final `done` record")

    def _http_error(self, request: ChatRequest, status: int, raw: bytes) -> Exception:
        text = raw.decode("utf-8", "replace")
        try:
            detail = str(json.loads(text).get("error", text))
        except (ValueError, AttributeError):
            detail = text
        overflow = classify_overflow(request, self.num_ctx, error_text=detail)
        if overflow is not None:
            return overflow
        if status == 429 or status >= 500:
            return Transient(f"HTTP {status}: {detail[:200]}")
        if status == 404:
            return ModelNotFound(
                f"Ollama has no model {self.info.model!r} ({detail[:200]}). Pull it with "
                f"`ollama pull {self.info.model}` or choose an installed one with --model."
            )
        return ProviderError(f"Ollama rejected the request (HTTP {status}): {detail[:300]}")
