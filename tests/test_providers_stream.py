"""The real providers (direct SSE for OpenAI-compatible servers, native /api/chat for Ollama)
against the loopback fake: streaming, split tool-call deltas, usage, overflow shapes on the
wire, retries, dropped and broken streams, empty replies and Ctrl-C. A guard refuses every
non-loopback connection for the whole module."""

from __future__ import annotations

import ipaddress
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from swival.config import Settings
from swival.errors import (
    ContextOverflowError,
    EmptyResponseError,
    ProviderUnreachable,
    TransientProviderError,
)
from swival.messages import Message, ToolCall
from swival.providers.base import ChatRequest, Completion, Provider, Restart, TextChunk
from swival.providers.factory import connect
from swival.providers.streaming import RetryPolicy
from tests.fakeserver import FakeServer, Reply, error, text, tool, tools

Make = Callable[..., FakeServer]
FAST = RetryPolicy(retries=2, backoff=0.001)
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}},
                   "required": ["file_path"]}}}]


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Refuse (and record) any connection that is not to the loopback range."""
    refused: list[Any] = []
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and not ipaddress.ip_address(host).is_loopback:
            refused.append(address)
            raise OSError(f"test guard: no network ({address})")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield refused
    assert not refused, f"something tried to reach the network: {refused}"


def provider_for(server: FakeServer, **kw: Any) -> Provider:
    provider_kind = {"openai": "generic"}.get(server.kind, server.kind)
    return connect(Settings(provider=provider_kind, base_url=server.url, **kw), FAST)


def ask(content: str = "hi", estimate: int = 0, **kw: Any) -> ChatRequest:
    return ChatRequest([Message("system", "You are terse."), Message("user", content)],
                       tools=TOOLS, estimated_prompt_tokens=estimate, **kw)


def run(provider: Provider, request: ChatRequest) -> tuple[list[str], Completion]:
    chunks: list[str] = []
    for item in provider.stream(request):
        if isinstance(item, TextChunk):
            chunks.append(item.text)
        elif isinstance(item, Completion):
            return chunks, item
    raise AssertionError("no completion")


def test_streamed_text_and_usage(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(text("The answer is 42.", chunk=3, usage=(120, 7)))
    chunks, done = run(provider_for(server), ask())
    assert len(chunks) >= 5 and "".join(chunks) == "The answer is 42."
    assert done.message.content == "The answer is 42." and done.finish_reason == "stop"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (120, 7)  # type: ignore[union-attr]
    body = server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["name"] == "read_file"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_split_tool_call_deltas_are_assembled(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio")
    server.script(tools([("read_file", {"file_path": "src/very/long/path/module.py"}),
                         ("read_file", {"file_path": "README.md"})], arg_chunk=3))
    _, done = run(provider_for(server), ask())
    calls = done.message.tool_calls
    assert [dict(c.arguments) for c in calls] == [
        {"file_path": "src/very/long/path/module.py"}, {"file_path": "README.md"}]
    assert [c.id for c in calls] == ["call_0", "call_1"] and done.finish_reason == "tool_calls"


def test_broken_streamed_arguments_are_repaired_or_reported(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(tools([("read_file", "{'file_path': 'a.py',}")]),
                  tools([("read_file", '{"file_path": a.py}')]))
    provider = provider_for(server)
    _, fixed = run(provider, ask())
    assert dict(fixed.message.tool_calls[0].arguments) == {"file_path": "a.py"}
    assert fixed.notes == ("the arguments of read_file (single quotes, trailing comma)",)
    _, broken = run(provider, ask())
    assert broken.message.tool_calls[0].arguments_error is not None


def test_tool_call_written_as_text_is_recovered(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(text('<tool_call>\n{"name": "read_file", "arguments": {"file_path": "x.py"}}'
                       "\n</tool_call>"))
    _, done = run(provider_for(server), ask())
    assert done.message.tool_calls[0].name == "read_file" and done.message.content == ""


def test_conversation_with_tool_results_reaches_the_server(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(text("done"))
    call = ToolCall("call_0", "read_file", {"file_path": "a.py"})
    request = ChatRequest([Message("user", "read a.py"),
                           Message("assistant", "", tool_calls=(call,)),
                           Message("tool", "print(1)", tool_call_id="call_0", name="read_file")],
                          tools=TOOLS)
    run(provider_for(server), request)
    sent = server.requests[0]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "read_file"
    assert sent[2]["role"] == "tool" and sent[2]["tool_call_id"] == "call_0"


@pytest.mark.parametrize(("kind", "prompt_known"), [
    ("llamacpp", True), ("lmstudio", True), ("openai", True)])
def test_wire_overflow_errors_are_classified(fake_server: Make, kind: str,
                                             prompt_known: bool) -> None:
    server = fake_server(kind=kind, window=600)
    server.script(text("never sent"))
    with pytest.raises(ContextOverflowError) as err:
        run(provider_for(server), ask("x" * 4000))
    assert err.value.kind == "rejected" and err.value.window == 600
    assert err.value.prompt_tokens is not None and err.value.prompt_tokens > 600
    assert len(server.requests) == 1  # an overflow is not retried


def test_lmstudio_empty_stream_near_the_window(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio", window=4096)
    server.script(Reply(mode="empty"))
    with pytest.raises(ContextOverflowError) as err:
        run(provider_for(server), ask(estimate=3900))
    assert err.value.kind == "empty"


def test_empty_reply_is_retried_once(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(mode="empty"), text("second try"))
    _, done = run(provider_for(server), ask(estimate=100))
    assert done.message.content == "second try" and len(server.requests) == 2


def test_a_reply_the_output_limit_cut_before_any_text_says_so(fake_server: Make) -> None:
    """A thinking model can spend the whole output limit on reasoning: asked again, it
    would do the same, so the error says what to change instead of 'empty reply'."""
    server = fake_server(kind="llamacpp")
    server.script(Reply(text="", finish_reason="length"))
    with pytest.raises(EmptyResponseError, match=r"reached the output limit \(512 tokens a "
                                                 r"reply\) before writing any reply") as err:
        run(provider_for(server), ask(estimate=100, max_output_tokens=512))
    assert "--max-output-tokens" in str(err.value) and len(server.requests) == 1


def test_two_empty_replies_raise(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(mode="empty"), Reply(mode="empty"))
    with pytest.raises(EmptyResponseError, match="empty reply twice"):
        run(provider_for(server), ask(estimate=100))


def test_length_stop_at_the_window(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp", window=2048)
    server.script(text("partial", finish_reason="length", usage=(1990, 58)))
    with pytest.raises(ContextOverflowError) as err:
        run(provider_for(server), ask(estimate=1900))
    assert err.value.kind == "length"


def test_429_and_500_are_retried(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(error(429, "slow down"), error(503, "loading model"), text("ok"))
    items = list(provider_for(server).stream(ask()))
    done = items[-1]
    assert isinstance(done, Completion) and done.message.content == "ok"
    assert len(server.requests) == 3
    # each wait is said, so a retry never passes in silence
    reasons = [item.reason for item in items if isinstance(item, Restart)]
    assert len(reasons) == 2
    assert re.fullmatch(r"No reply yet: rate limited \(HTTP 429\), retrying in \d+\.\d s "
                        r"\(attempt 2 of 3\)\.", reasons[0]), reasons[0]
    assert reasons[1].startswith("No reply yet: server error (HTTP 503), retrying in ")


def test_persistent_500_gives_a_clear_error(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(*[error(500, "boom")] * 3)
    with pytest.raises(TransientProviderError, match="kept failing after 3 attempts") as err:
        run(provider_for(server), ask())
    assert len(server.requests) == 3
    assert '; the last failure: server error (HTTP 500). Details: "boom". Check' in str(
        err.value)


def test_malformed_stream_is_retried(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(text="x", mode="malformed"), text("fine"))
    _, done = run(provider_for(server), ask())
    assert done.message.content == "fine"


@pytest.mark.parametrize("mode", ["die", "truncated"])
def test_stream_cut_after_text_restarts_and_retries(fake_server: Make, mode: str) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(text="a long answer that will not arrive whole", chunk=2, mode=mode),
                  text("the whole answer"))
    items = list(provider_for(server).stream(ask()))
    restarts = [i for i, item in enumerate(items) if isinstance(item, Restart)]
    assert len(restarts) == 1
    reason = items[restarts[0]].reason  # type: ignore[union-attr]
    # one plain line: why, the wait, the attempt; no exception class names
    assert re.fullmatch(r"The reply was cut: (the connection dropped|the server sent an "
                        r"event that is not JSON), retrying in \d+\.\d s \(attempt 2 of 3\)\.",
                        reason), reason
    before = "".join(i.text for i in items[:restarts[0]] if isinstance(i, TextChunk))
    after = "".join(i.text for i in items[restarts[0]:] if isinstance(i, TextChunk))
    assert before and "a long answer".startswith(before[:10])
    assert after == "the whole answer" and items[-1].message.content == after  # type: ignore[union-attr]
    assert len(server.requests) == 2


@pytest.mark.parametrize("mode", ["die", "truncated"])
def test_stream_that_keeps_getting_cut_gives_a_clear_error(fake_server: Make, mode: str) -> None:
    server = fake_server(kind="llamacpp")
    server.script(*[Reply(text="an answer cut every time", chunk=2, mode=mode)] * 3)
    with pytest.raises(TransientProviderError, match="kept failing after 3 attempts") as err:
        list(provider_for(server).stream(ask()))
    assert len(server.requests) == 3
    assert not re.search(r"\w+(Error|Exception)\b", str(err.value)), err.value


def test_cut_stream_before_any_text_is_retried(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(Reply(tool_calls=(("read_file", {"file_path": "a"}),), mode="die"),
                  tool("read_file", file_path="a"))
    _, done = run(provider_for(server), ask())
    assert done.message.tool_calls[0].arguments == {"file_path": "a"}


def test_dead_server_on_first_call_is_unreachable(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    provider = provider_for(server)
    server.stop()
    with pytest.raises(ProviderUnreachable, match="Nothing answers"):
        run(provider, ask())


@pytest.mark.parametrize("kind", ["llamacpp", "ollama"])
def test_ctrl_c_closes_the_connection_at_once(fake_server: Make, kind: str) -> None:
    server = fake_server(kind=kind)
    server.script(Reply(text="never", mode="hang", hang=20))
    provider = provider_for(server)
    main = threading.main_thread().ident
    assert main is not None and threading.get_ident() == main

    sent_at: list[float] = []

    def interrupt_once_the_request_is_in() -> None:
        while not server.requests:
            time.sleep(0.01)
        time.sleep(0.1)
        sent_at.append(time.monotonic())
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt_once_the_request_is_in, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run(provider, ask())
    assert time.monotonic() - sent_at[0] < 1.0
    deadline = time.monotonic() + 2
    while server.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.disconnects == 1


# -- Ollama -------------------------------------------------------------------------------

def test_ollama_sends_one_constant_num_ctx(fake_server: Make) -> None:
    server = fake_server(kind="ollama", model="qwen2.5-coder:7b", window=16384)
    server.script(tool("read_file", file_path="a.py"), text("It prints 1.", usage=(900, 5)),
                  text("ok"))
    provider = provider_for(server)
    _, first = run(provider, ask())
    call = first.message.tool_calls[0]
    assert call.name == "read_file" and call.arguments == {"file_path": "a.py"}
    history = [Message("user", "what does a.py do?"),
               Message("assistant", "", tool_calls=(call,)),
               Message("tool", "print(1)", tool_call_id=call.id, name="read_file")]
    chunks, second = run(provider, ChatRequest(history, tools=TOOLS))
    run(provider, ChatRequest(history, tools=TOOLS, max_output_tokens=50))
    assert server.num_ctx_seen == [16384, 16384, 16384]
    assert "".join(chunks) == "It prints 1."
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (900, 5)  # type: ignore[union-attr]
    sent = server.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == {"file_path": "a.py"}
    assert sent[2]["tool_name"] == "read_file"


def test_ollama_configured_window_is_the_num_ctx(fake_server: Make) -> None:
    server = fake_server(kind="ollama", window=4096)
    server.script(text("a"), text("b"))
    provider = provider_for(server, max_context_tokens=12000)
    run(provider, ask())
    run(provider, ask())
    assert server.num_ctx_seen == [12000, 12000]


def test_ollama_silent_truncation_comes_back_with_its_figures(fake_server: Make) -> None:
    """Ollama cuts a prompt over num_ctx and says nothing. The provider passes the reply
    on with the server's figures, saying whether they cover cached tokens; the context
    engine judges a cut from them (swival/context/calibration.py)."""
    server = fake_server(kind="ollama", window=2048)
    server.script(text("I only saw the end"))
    provider = provider_for(server)
    _, done = run(provider, ask("y" * 12000, estimate=3000))
    assert done.message.content == "I only saw the end"
    assert done.usage is not None and 0 < done.usage.prompt_tokens <= 2048
    assert getattr(provider, "counts_include_cache", True) is False


def test_ollama_errors_and_retries(fake_server: Make) -> None:
    server = fake_server(kind="ollama")
    server.script(error(500, "runner crashed"),
                  Reply(tool_calls=(("read_file", {"file_path": "a"}),), mode="die"), text("back"))
    _, done = run(provider_for(server), ask())
    assert done.message.content == "back" and len(server.requests) == 3
