"""Checks of the litellm path for hosted models, run in a child process so that importing
litellm (seconds, ~170 MB) is paid once and never lands in the test runner itself.

    python -m tests.hosted_child PROJECT_DIR   -> one JSON object on the last line of stdout

Every non-loopback connection is refused first (tests/netguard.py), so the result also
says whether anything tried to leave the machine. Each check drives `HostedProvider`
(litellm's real code) against loopback FakeServers given as the API base of a hosted-style
model string, and how each kind of failure ends (`errors`); tests/test_hosted.py asserts
on the result.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from swival.commands import dispatch
from swival.config import Settings
from swival.errors import SwivalError
from swival.messages import Message, Usage
from swival.providers.base import ChatRequest, Completion, ProviderInfo, Restart, complete
from swival.providers.factory import spent
from swival.providers.hosted import CallConfig, HostedProvider, import_litellm
from swival.providers.pricemap import hosted_window
from swival.providers.streaming import RetryPolicy
from swival.providers.wire import Limits
from swival.session import build_session
from tests import netguard
from tests.fakeserver import FakeServer, Reply, error, text, tools

MODEL = "openai/gpt-4o-mini"
# Model strings of several providers whose window the price map and litellm must agree on.
AGREE = (
    "openai/gpt-4o-mini", "openai/gpt-4.1", "anthropic/claude-sonnet-4-5",
    "gemini/gemini-2.5-flash", "mistral/mistral-large-latest", "deepseek/deepseek-chat",
    "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", "openrouter/nobody/no-such-model",
)
FIRST_CALL_PACKAGES = ("litellm", "openai", "httpx", "httpcore", "tiktoken", "h11")
READ_TOOL = {"type": "function", "function": {
    "name": "read_file", "description": "Read",
    "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}}}


def provider(server: FakeServer, limits: Limits, key: str | None = "sk-test-key",
             model: str = MODEL) -> HostedProvider:
    info = ProviderInfo("openai", "(hosted)", model, hosted_window(model))
    call = CallConfig(model, server.v1_url, key, limits)
    return HostedProvider(info, RetryPolicy(retries=2, backoff=0.01), call)


def run(hosted: HostedProvider, ask: str = "hello") -> dict[str, Any]:
    """One streamed request: its answer, how many Restarts it took, and its duration."""
    started = time.monotonic()
    items = list(hosted.stream(ChatRequest([Message("user", ask)])))
    final = items[-1]
    assert isinstance(final, Completion)
    return {"answer": final.message.content,
            "restarts": sum(isinstance(item, Restart) for item in items),
            "seconds": time.monotonic() - started}


def agreement() -> dict[str, list[int | None]]:
    """(price map, litellm.get_model_info) window per model string."""
    litellm = import_litellm()
    out: dict[str, list[int | None]] = {}
    for model in AGREE:
        try:
            info = litellm.get_model_info(model)
            theirs = info.get("max_input_tokens") or info.get("max_tokens")
        except Exception:  # noqa: BLE001 - litellm's own error for an unmapped model
            theirs = None
        out[model] = [hosted_window(model).tokens, theirs]
    return out


def first_call_after_warm_up() -> list[str]:
    """The modules of litellm's stack that the first real call still had to import after
    `warm()` (none, when the warm-up preloads what that call needs)."""
    with FakeServer(kind="openai", model="gpt-4o-mini") as server:
        hosted = provider(server, Limits(30.0, 30.0))
        hosted.warm()
        before = set(sys.modules)
        server.script(text("Warm."))
        run(hosted)
        assert len(server.requests) == 1
        return sorted(m for m in set(sys.modules) - before
                      if m.partition(".")[0] in FIRST_CALL_PACKAGES)


def exchange(project: Path) -> dict[str, Any]:
    """A streamed tool call, then an answer, then a whole turn of a session (for /context's
    cost line): what arrived, and what it cost by the price map."""
    with FakeServer(kind="openai", model="gpt-4o-mini") as server:
        hosted = provider(server, Limits(30.0, 30.0))
        hosted.warm()
        server.script(tools([("read_file", {"file_path": "a.py"})], arg_chunk=4),
                      text("It prints hello.", usage=(40, 5)), text("Hi.", usage=(2000, 3)))
        first = complete(hosted, ChatRequest([Message("user", "read a.py")], tools=[READ_TOOL]))
        second = complete(hosted, ChatRequest([Message("user", "and now?")], tools=[READ_TOOL]))
        call = first.message.tool_calls[0]
        session = build_session(Settings(project_root=project), hosted, interactive=False)
        for _ in session.agent.run_turn("say hi"):
            pass
        return {
            "call": [call.name, dict(call.arguments)], "answer": second.message.content,
            "usage": [second.usage.prompt_tokens, second.usage.completion_tokens]
            if second.usage else None,
            "model_sent": server.requests[0]["model"],
            "window": [hosted.info.window.tokens, hosted.info.window.source],
            "spent": spent(hosted), "priced": hosted.cost(Usage(1_000_000, 0)),
            "context_footer": dispatch("/context", session.agent).footer,
        }


def time_limits() -> dict[str, Any]:
    """A keep-alive trickle and a silent server are cut by the limits and retried; a slow
    steady stream that lasts well past the idle limit is not cut."""
    out: dict[str, Any] = {}
    with FakeServer(kind="openai", model="gpt-4o-mini") as server:
        hosted = provider(server, Limits(first=1.0, idle=0.5))
        server.script(Reply(text="Half of this reply, then only keep-alive comments.",
                            mode="trickle", hang=20.0), text("Second try."))
        out["trickle"] = {**run(hosted), "requests": len(server.requests)}
        server.script(Reply(mode="hang", hang=20.0), text("After the silence."))
        out["silent"] = {**run(hosted), "requests": len(server.requests)}
        server.script(Reply(text="A slow but steady stream of words.", delay=0.15, chunk=3))
        out["steady"] = {**run(hosted), "requests": len(server.requests)}
    return out


def failure(hosted: HostedProvider, server: FakeServer) -> dict[str, Any]:
    """How one streamed request ends when it fails: the error's class, exit code and
    message, the Restart lines on the way, how many requests reached the server, and how
    long it took."""
    started, restarts = time.monotonic(), []
    before = len(server.requests)
    try:
        for item in hosted.stream(ChatRequest([Message("user", "hello")])):
            if isinstance(item, Restart):
                restarts.append(item.reason)
    except SwivalError as exc:
        return {"error": type(exc).__name__, "exit_code": exc.exit_code, "message": str(exc),
                "restarts": restarts, "requests": len(server.requests) - before,
                "seconds": time.monotonic() - started}
    return {"error": None, "restarts": restarts, "requests": len(server.requests) - before,
            "seconds": time.monotonic() - started}


def errors() -> dict[str, Any]:
    """What a person is told, and what is retried, for each way a hosted call fails."""
    out: dict[str, Any] = {}
    with FakeServer(kind="openai", model="gpt-4o-mini") as server:
        os.environ["OPENAI_API_KEY"] = "sk-wrong-key"
        from_env = provider(server, Limits(30.0, 30.0), key=None)
        server.script(error(401, "Incorrect API key provided: sk-wrong-key."))
        out["refused_key"] = failure(from_env, server)
        del os.environ["OPENAI_API_KEY"]
        out["no_key"] = failure(from_env, server)  # litellm refuses to call
        hosted = provider(server, Limits(30.0, 30.0))
        server.script(error(429, "Rate limit reached", retry_after="1"), text("Later."))
        out["rate_limited"] = failure(hosted, server)
        server.script(*[error(503, "The engine is currently overloaded")] * 3)
        out["server_error"] = failure(hosted, server)
        server.script(Reply(text="Half a reply, then", mode="die"), text("Whole."))
        out["cut"] = failure(hosted, server)
        missing = provider(server, Limits(30.0, 30.0), model="openai/gpt-4o-mni")
        server.script(error(404, "The model `gpt-4o-mni` does not exist"))
        out["no_model"] = failure(missing, server)
    with socket.socket() as closed:  # bound, never listening: connecting is refused
        closed.bind(("127.0.0.1", 0))
        info = ProviderInfo("openai", "(hosted)", MODEL, hosted_window(MODEL))
        call = CallConfig(MODEL, f"http://127.0.0.1:{closed.getsockname()[1]}/v1", "sk-x",
                          Limits(30.0, 30.0))
        out["unreachable"] = failure(HostedProvider(info, RetryPolicy(retries=2), call),
                                     server)
    return out


def main() -> None:
    netguard.install()
    result = {"first_call_imports": first_call_after_warm_up(),  # first: nothing loaded yet
              "exchange": exchange(Path(sys.argv[1])), "agreement": agreement(),
              "limits": time_limits(), "errors": errors()}
    result["mcp_sdk_loaded"] = "mcp" in sys.modules  # litellm can use it; hosted calls must not
    result["attempts"] = netguard.ATTEMPTS
    print(json.dumps(result))


if __name__ == "__main__":
    main()
