"""Hosted providers (OpenRouter, OpenAI, Anthropic, Gemini, ...) through litellm.

Only a hosted model string (no `--base-url`) comes here; local servers are reached directly
(openai_compat.py, ollama.py), so they never pay litellm's import (seconds, ~170 MB).

Connecting imports nothing heavy: the window of a hosted model the user did not size comes
from litellm's price map read as a file (pricemap.py). litellm itself is imported by `warm()`
(the REPL runs it in the background once the prompt is drawn) or by the first call, always
with `LITELLM_LOCAL_MODEL_COST_MAP=True` so it never fetches its price map, with HuggingFace
tokenizer downloads off (its token counts then use the bundled cl100k copy), and with its own
logging and "Give Feedback" banners silenced. Calls always stream, ask for a final usage
chunk, pass `_skip_mcp_handler=True` (litellm 1.106 otherwise needs the `mcp` package
whenever tools are sent) and disable litellm's and the OpenAI client's own retries: retries
are ours (streaming.py), so each one is counted and bounded. The stream is read through a
`ChunkPump` (pump.py), which gives hosted calls the direct transports' two time limits
(`request_timeout` until the reply starts, `idle_timeout` between its pieces). Chunks go
through the same stream assembler as the direct transports (`absorb_chunk`).

The offline price map also gives the cost of the calls (`HostedProvider.cost`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from swival.errors import ProviderError
from swival.messages import Message, Usage
from swival.providers.assembly import StreamAssembly
from swival.providers.base import ChatRequest, ProviderInfo, StreamItem, TextChunk
from swival.providers.keys import how_to_set, key_variable
from swival.providers.openai_compat import absorb_chunk, chat_body
from swival.providers.overflow import classify_overflow
from swival.providers.pricemap import similar_models
from swival.providers.pump import ChunkPump
from swival.providers.replies import error_detail, retry_after, short, status_reason
from swival.providers.streaming import RetryPolicy, StreamingProvider, Transient
from swival.providers.wire import Limits

# Providers whose calls look for cloud credentials first, which may ask the network: the
# warm-up does not rehearse their request path (see HostedProvider.warm).
CREDENTIAL_CHAINS = ("azure", "bedrock", "vertex_ai")
REHEARSAL_TOOL = {"type": "function", "function": {
    "name": "noop", "description": "Does nothing.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}


def import_litellm() -> ModuleType:
    """Import litellm offline and quiet, without letting it read a `.env` file. Safe to
    call from several threads."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # never fetch the remote price map
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    # In its default "DEV" mode litellm's import loads the first `.env` found above its own
    # files into os.environ: with a virtual environment inside the project, a repository's
    # `.env` would then reach every command (BASH_ENV runs code) and could point the hosted
    # provider's API base elsewhere. Any other mode skips that.
    mode = os.environ.get("LITELLM_MODE")
    os.environ["LITELLM_MODE"] = "PRODUCTION"
    try:
        import litellm
    finally:
        if mode is None:
            os.environ.pop("LITELLM_MODE", None)
        else:
            os.environ["LITELLM_MODE"] = mode

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.drop_params = True  # a provider that lacks an option should not fail the call
    # Its token counter would fetch a tokenizer from HuggingFace for some models (llama).
    litellm.disable_hf_tokenizer_download = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm


@dataclass(frozen=True)
class CallConfig:
    """How to call: the litellm model string, the API base (None: litellm knows the
    provider's URL), the key (None: litellm reads the provider's variable) and the time
    limits of each attempt."""

    litellm_model: str
    api_base: str | None
    api_key: str | None
    limits: Limits


def _close(stream: Any) -> None:
    """Close a litellm stream, from any thread. Closing alone does not end a read blocked
    in another thread, so the socket under the HTTP reply is shut down first where the
    stream exposes it (the OpenAI client's streams do)."""
    inner = getattr(stream, "completion_stream", None)
    response = getattr(inner, "response", None)
    extensions = getattr(response, "extensions", None)
    network = extensions.get("network_stream") if isinstance(extensions, Mapping) else None
    sock = getattr(network, "get_extra_info", lambda _: None)("socket")
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: nothing left to stop
            sock.shutdown(socket.SHUT_RDWR)
    for obj in (inner, response):
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
        """Load what the first call loads, so that it leaves at once: litellm, then two
        rehearsals of this provider's call (same model, same options, a tool), neither of
        which leaves the machine or carries the user's key. One is answered by litellm's
        `mock_response` (its reply path: stream wrapper, token counting, cost); the other
        goes to a loopback port that refuses it (the provider's client and request path),
        except for providers that first look for cloud credentials. Failures are ignored:
        the real call reports its own."""
        litellm = import_litellm()
        kwargs = self._kwargs(ChatRequest([Message("user", "warm-up")], tools=[REHEARSAL_TOOL],
                                          max_output_tokens=16))
        kwargs.update(api_key="warm-up", timeout=5.0)
        with contextlib.suppress(Exception):
            for _ in litellm.completion(**kwargs, mock_response="ok"):
                pass
        if self.call.litellm_model.split("/", 1)[0] in CREDENTIAL_CHAINS:
            return
        with socket.socket() as closed:  # bound, never listening: connecting is refused
            closed.bind(("127.0.0.1", 0))
            kwargs["api_base"] = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
            with contextlib.suppress(Exception):
                for _ in litellm.completion(**kwargs):
                    pass

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
        limits = self.call.limits  # litellm's read timeout is a backstop; see pump.py
        kwargs.update(timeout=max(limits.first, limits.idle), max_retries=0, num_retries=0,
                      _skip_mcp_handler=True)
        if self.call.api_base is not None:
            kwargs["api_base"] = self.call.api_base
        if self.call.api_key:
            kwargs["api_key"] = self.call.api_key
        return kwargs

    def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
        litellm = import_litellm()
        kwargs = self._kwargs(request)
        assembly = StreamAssembly()
        pump = ChunkPump(lambda: litellm.completion(**kwargs), self.call.limits, _close)
        try:
            for chunk in pump.chunks(lambda: assembly.progress):
                text = absorb_chunk(_as_dict(chunk), assembly)
                if text:
                    yield TextChunk(text)
        except Transient:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is mapped below
            raise self._map_error(request, exc) from None
        finally:
            pump.close()
        if not _server_finished(pump.stream, assembly) and assembly.has_content:
            raise Transient("the stream ended before the reply was complete")
        rest = assembly.flush()
        if rest:
            yield TextChunk(rest)
        completion = assembly.completion()
        self._account(completion.usage)
        yield completion

    def _place(self) -> str:
        return f"{self.info.provider}'s API"

    def _unreachable(self) -> str:
        return (f"Cannot connect to {self._place()} (model {self.info.model}). Check this "
                "machine's network connection and any proxy setting, then try again.")

    def _failing_advice(self) -> str:
        return ("The provider may be overloaded or limiting your rate: wait a little, then "
                "try again.")

    def _map_error(self, request: ChatRequest, exc: Exception) -> Exception:
        """A litellm failure as what Swival does about it: an overflow goes to the context
        engine; a key that is missing or refused stops at once and names the variable to
        set; a rate limit or a server error is retried (honouring Retry-After); a model
        the provider lacks is named, with look-alikes from the price map. Messages carry
        what the provider said, without litellm's class names or tracebacks."""
        overflow = classify_overflow(request, self.info.window.tokens,
                                     error_text=_error_text(exc))
        if overflow is not None:
            return overflow
        if _refused(exc):
            return Transient(f"cannot connect to {self._place()}", refused=True)
        kinds = {cls.__name__ for cls in type(exc).__mro__}
        status = getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        said = _said(exc)
        if _no_key(said):  # litellm's own refusal to call without a key
            return ProviderError(f"No API key for {self.info.provider}. "
                                 + how_to_set(key_variable(self.call.litellm_model)))
        if kinds & {"AuthenticationError", "PermissionDeniedError"} or status in (401, 403):
            return ProviderError(self._key_message(status, said))
        if "RateLimitError" in kinds or status == 429:
            return Transient(status_reason(429), detail=said, retry_after=_retry_after(exc))
        if "NotFoundError" in kinds or status == 404:
            return ProviderError(self._no_model(said))
        if "Timeout" in kinds:
            return Transient(f"{self._place()} sent nothing for too long")
        if "APIConnectionError" in kinds or "APIConnectionError" in str(exc)[:200]:
            return Transient(f"the connection to {self._place()} dropped")  # litellm wraps
        if status is None:  # a dropped stream in other classes too, hence the text test
            return Transient(f"the call to {self._place()} failed", detail=said)
        if status >= 500:
            return Transient(status_reason(status), detail=said, retry_after=_retry_after(exc))
        return ProviderError(f"{self.info.provider} rejected the request (HTTP {status}). "
                             f"It said: {_quoted(said)}")

    def _key_message(self, status: int | None, said: str) -> str:
        name = self.info.provider
        where = ("the key given with --api-key (or api_key in swival.toml)" if self.call.api_key
                 else key_variable(self.call.litellm_model) or "the provider's API-key variable")
        what = "refused the API key" if status == 401 else "refused the request"
        return (f"{name} {what} (HTTP {status or 401}). It said: {_quoted(said)} Check "
                f"that {where} holds a valid {name} key with access to {self.info.model}.")

    def _no_model(self, said: str) -> str:
        model = self.call.litellm_model
        alike = similar_models(model)
        hint = (f" Models of {self.info.provider} with a similar name: {', '.join(alike)}."
                if alike else "")
        return (f"{self.info.provider} has no model {model!r} (HTTP 404). It said: "
                f"{_quoted(said)}{hint} Choose one from the provider's model list and pass "
                f"it as --model {self.info.provider}/<name>.")


def _retry_after(exc: BaseException) -> float | None:
    """The Retry-After of the HTTP reply behind a litellm error, when it kept one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers",
                                                             None)
    try:
        return retry_after(headers.get("retry-after")) if headers is not None else None
    except AttributeError:
        return None


_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:|\w+Error:|\w+Exception\s+-)\s*")


def _said(exc: BaseException) -> str:
    """What the provider (or litellm on its behalf) said, without litellm's class-name
    prefixes and any traceback it embeds, on one line."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping) and body.get("message"):
        return short(str(body["message"]))
    text = str(getattr(exc, "message", None) or exc)
    text = text.split("Traceback (most recent call last)")[0].strip()
    while (bare := _LITELLM_PREFIX.sub("", text, count=1).strip()) != text:
        text = bare  # litellm nests them: "litellm.A: litellm.B: BError: CException - ..."
    if text[:2] in ("b'", 'b"') and text[-1:] == text[1]:  # a bytes body, as repr'd
        text = text[2:-1]
    return short(error_detail(text))


def _quoted(said: str) -> str:
    """The provider's words in quotes, ending the sentence."""
    return f'"{said.rstrip(". ")}".' if said else "nothing more."


def _no_key(said: str) -> bool:
    """Whether litellm refused to send the call for want of a key."""
    low = said.lower()
    return any(word in low for word in ("api key", "api_key", "credentials")) and any(
        word in low for word in ("missing", "must be set", "not set", "no key"))


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
