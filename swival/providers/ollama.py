"""Ollama through its native chat API (`POST /api/chat`, streamed NDJSON).

Why native rather than Ollama's OpenAI-compatible endpoint: the one thing that matters with
Ollama is `options.num_ctx` — the OpenAI-compatible endpoint cannot set it, and a value that
changes between requests makes Ollama reload the model. Talking to `/api/chat` ourselves makes
that guarantee visible in one line (`_body`) and keeps the exact usage figures Ollama reports
(`prompt_eval_count`, `eval_count`, `prompt_eval_cached_count` where present, `done_reason`).

Every request sends the same `num_ctx`: the configured or detected window fixed at connect.
Ollama's `prompt_eval_count` counts only the tokens it had to evaluate (a KV-cache hit
excludes the reused prefix) unless `prompt_eval_cached_count` comes with it, so the provider
says `counts_include_cache = False` and the context engine takes such a count as a lower
bound (swival/context/calibration.py). Each NDJSON line is one record; the one with
`done: true` ends the reply. Tool calls arrive whole, with their arguments as an object.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from swival.errors import ModelNotFound
from swival.messages import Message
from swival.providers.assembly import StreamAssembly
from swival.providers.base import ChatRequest, ProviderInfo
from swival.providers.replies import short
from swival.providers.streaming import RetryPolicy, Transient
from swival.providers.wire import DirectProvider, HttpChannel, stream_error


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


class OllamaProvider(DirectProvider):
    """Streams `/api/chat` replies, sending `num_ctx` (fixed for the session) every time."""

    counts_include_cache = False
    path = "/api/chat"

    def __init__(self, info: ProviderInfo, policy: RetryPolicy, channel: HttpChannel,
                 num_ctx: int) -> None:
        super().__init__(info, policy, channel)
        self.num_ctx = num_ctx

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

    def _decoder(self, request: ChatRequest, assembly: StreamAssembly) -> Callable[[str], str]:
        def decode(line: str) -> str:
            if not line.strip():
                return ""
            try:
                record = json.loads(line)
            except ValueError:
                raise Transient("Ollama sent a line that is not JSON",
                                detail=short(line, 120)) from None
            if not isinstance(record, Mapping):
                return ""
            if record.get("error"):
                raise stream_error(record["error"], request, self.num_ctx)
            return _absorb(record, assembly)

        return decode

    def _missing_model(self, detail: str) -> Exception:
        return ModelNotFound(
            f"Ollama has no model {self.info.model!r} ({short(detail, 200)}). Pull it with "
            f"`ollama pull {self.info.model}` or choose an installed one with --model."
        )


def _absorb(record: Mapping[str, Any], assembly: StreamAssembly) -> str:
    message = record.get("message")
    text = ""
    if isinstance(message, Mapping):
        assembly.thinking(str(message.get("thinking") or ""))
        for raw in message.get("tool_calls") or ():
            fn = raw.get("function") if isinstance(raw, Mapping) else None
            if isinstance(fn, Mapping):
                assembly.tool_call(raw.get("id"), str(fn.get("name", "")), fn.get("arguments"))
        content = message.get("content")
        text = assembly.text(content if isinstance(content, str) else "")
    if record.get("done"):
        assembly.usage(record.get("prompt_eval_count"), record.get("eval_count"))
        assembly.cached(record.get("prompt_eval_cached_count"))
        assembly.finish(record.get("done_reason") or "stop")
        assembly.done()
    return text
