"""LM Studio, llama.cpp and any OpenAI-compatible server, directly over httpx.

`POST {api_base}/chat/completions` with `stream: true` and `stream_options.include_usage`, read
as server-sent events (a server that ignores `stream` and answers one `chat.completion`
object is read too). Each `data:` line is one JSON chunk (no server we talk to splits a chunk
over several `data:` lines); `data: [DONE]` ends the reply; `: ...` comment lines and blank
lines are keep-alive framing and carry nothing. Errors come as HTTP error replies (the
overflow 400s of llama.cpp and LM Studio among them, see overflow.py), or inside the stream as
`data: {"error": ...}` (OpenAI, vLLM) or llama.cpp's own `error: {...}` line.

From each chunk the stream assembler takes `choices[0].delta` (text, `reasoning_content` /
`reasoning` as progress only, tool-call fragments keyed by index), `finish_reason`, `usage`
(with `prompt_tokens_details.cached_tokens`) and llama.cpp's `timings.cache_n` (the prompt
tokens it reused from its cache).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from swival.messages import Message
from swival.providers.assembly import StreamAssembly
from swival.providers.base import ChatRequest
from swival.providers.replies import short
from swival.providers.streaming import Transient
from swival.providers.tokenize import ExactCounter
from swival.providers.wire import DirectProvider, stream_error


class OpenAICompatProvider(DirectProvider):
    """Streams chat completions from an OpenAI-compatible server (the channel's base URL is
    the server's API base, e.g. `http://127.0.0.1:1234/v1`). With `exact` (llama.cpp),
    `count_prompt` gives the server's own count of a prompt before it is sent."""

    path = "/chat/completions"
    exact: ExactCounter | None = None

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        return chat_body(self.info.model, request)

    def count_prompt(self, messages: Sequence[Message],
                     tools: Sequence[Mapping[str, Any]]) -> int | None:
        """The prompt's size in the server's tokens (its chat template and tokenizer),
        or None when the server cannot say."""
        if self.exact is None:
            return None
        return self.exact.count(chat_body(self.info.model, ChatRequest(messages, tools)))

    def _decoder(self, request: ChatRequest, assembly: StreamAssembly) -> Callable[[str], str]:
        window = self.info.window.tokens
        whole: list[str] = []  # a reply sent as one JSON object instead of events

        def decode(line: str) -> str:
            if whole or (not assembly.progress and line.lstrip().startswith("{")):
                whole.append(line)
                try:
                    body = json.loads("\n".join(whole))
                except ValueError:
                    return ""  # the object goes on in the next line
                whole.clear()
                if isinstance(body, Mapping) and body.get("error"):
                    raise stream_error(body["error"], request, window)
                return absorb_whole(body, assembly) if isinstance(body, Mapping) else ""
            field, _, payload = line.partition(":")
            payload = payload.strip()
            if field not in ("data", "error") or not payload:
                return ""  # blank line, comment, `event:`/`id:` framing
            if field == "data" and payload == "[DONE]":
                assembly.done()
                return ""
            try:
                chunk = json.loads(payload)
            except ValueError:
                raise Transient("the server sent an event that is not JSON",
                                detail=short(payload, 120)) from None
            if field == "error" or (isinstance(chunk, Mapping) and chunk.get("error")):
                raise stream_error(chunk.get("error", chunk) if isinstance(chunk, Mapping)
                                   else chunk, request, window)
            return absorb_chunk(chunk, assembly) if isinstance(chunk, Mapping) else ""

        return decode


def chat_body(model: str, request: ChatRequest) -> dict[str, Any]:
    """A streamed chat-completions request body, asking for a final usage chunk."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [m.to_dict() for m in request.messages],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": request.max_output_tokens,
    }
    if request.tools:
        body["tools"] = [dict(t) for t in request.tools]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def absorb_whole(body: Mapping[str, Any], assembly: StreamAssembly) -> str:
    """Feed a whole `chat.completion` object (a server that ignored `stream: true`) to the
    assembler as one chunk; return its visible text."""
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else {}
    message = choice.get("message") if isinstance(choice, Mapping) else None
    message = message if isinstance(message, Mapping) else {}
    calls = message.get("tool_calls")
    delta = {**message, "tool_calls": [{**call, "index": i} for i, call in
                                       enumerate(calls if isinstance(calls, list) else ())
                                       if isinstance(call, Mapping)]}
    text = absorb_chunk({**body, "choices": [{"delta": delta, "finish_reason":
                                              choice.get("finish_reason")}]}, assembly)
    assembly.done()
    return text


def absorb_chunk(chunk: Mapping[str, Any], assembly: StreamAssembly) -> str:
    """Feed one OpenAI-style chunk to the assembler; return its visible text."""
    usage = chunk.get("usage")
    if isinstance(usage, Mapping):
        assembly.usage(usage.get("prompt_tokens"), usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, Mapping):
            assembly.cached(details.get("cached_tokens"))
    timings = chunk.get("timings")
    if isinstance(timings, Mapping) and "cache_n" in timings:
        assembly.cached(timings.get("cache_n"))
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return ""
    choice = choices[0]
    delta = choice.get("delta")
    text = ""
    if isinstance(delta, Mapping):
        assembly.thinking(str(delta.get("reasoning_content") or delta.get("reasoning") or ""))
        for raw in delta.get("tool_calls") or ():
            if isinstance(raw, Mapping):
                fn = raw.get("function")
                fn = fn if isinstance(fn, Mapping) else {}
                assembly.tool_delta(raw.get("index"), raw.get("id"), fn.get("name"),
                                    fn.get("arguments"))
        text = assembly.text(_content_text(delta.get("content"), assembly))
    assembly.finish(choice.get("finish_reason"))
    return text


def _content_text(content: Any, assembly: StreamAssembly) -> str:
    """A delta's text: a string, or a list of parts (`{"type": "text", "text": ...}`, as
    Mistral-style servers send), whose `thinking` parts are reasoning."""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, Mapping) and part.get("type") == "thinking":
            assembly.thinking("reasoning")  # progress; what it thought is not the reply
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            pieces.append(part["text"])
    return "".join(pieces)
