"""What real servers do that the OpenAI spec does not spell out, through the direct transport
against the loopback fake: `<think>` blocks in the reply text (LM Studio, llama-server with
`--reasoning-format none`, older Ollama), tool-call deltas without an index, HTTP proxy
variables that must not catch a server on this machine, and an https server whose
certificate is self-signed. Every non-loopback connection is refused (the guard of
test_providers_stream.py)."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import pytest

from swival.config import Settings
from swival.errors import ModelNotFound, ProviderError, ProviderUnreachable
from swival.providers.base import Completion, Provider, Restart
from swival.providers.factory import connect
from swival.providers.thinking import ThinkStrip
from tests.e2e import run_swival
from tests.fakeserver import FakeServer, Reply, text
from tests.test_providers_stream import FAST, Make, ask, loopback_only, provider_for, run

__all__ = ["loopback_only"]  # the autouse network guard, imported to apply here too

DATA = Path(__file__).resolve().parent / "data"


def event(delta: dict[str, Any], finish: str | None = None) -> str:
    chunk = {
        "id": "x",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n"


def contents(*pieces: str) -> Reply:
    return Reply(
        raw=(*[event({"content": p}) for p in pieces], event({}, "stop"), "data: [DONE]\n\n")
    )


def test_a_think_block_in_the_text_is_neither_shown_nor_kept(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio")
    server.script(
        contents(
            "<th", "ink>\nThe user wants", " a number.\n</thi", "nk>\n\n", "The answer", " is 42."
        )
    )
    chunks, done = run(provider_for(server), ask())
    assert "".join(chunks) == "The answer is 42." == done.message.content


def test_a_call_inside_the_reasoning_is_not_run(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(
        contents(
            '<think>I could send {"name": "read_file", "arguments": '
            '{"file_path": "a.py"}} but no.</think>',
            "Nothing to read.",
        )
    )
    chunks, done = run(provider_for(server), ask())
    assert done.message.tool_calls == ()
    assert "".join(chunks) == "Nothing to read." == done.message.content


def test_ollama_think_block_in_content_is_dropped_too(fake_server: Make) -> None:
    server = fake_server(kind="ollama")
    server.script(text("<think>hmm</think>Four.", chunk=3))
    chunks, done = run(provider_for(server), ask())
    assert "".join(chunks) == "Four." == done.message.content


def test_think_strip_leaves_other_text_alone() -> None:
    mid = ThinkStrip()
    assert mid.feed("Use <think> tags") + mid.feed(" like this.") == "Use <think> tags like this."
    short = ThinkStrip()
    assert short.feed("<th") == "" and short.flush() == "<th"  # a reply that is only "<th"
    unclosed = ThinkStrip()
    assert unclosed.feed("<think>still going") == "" and unclosed.flush() == ""
    assert unclosed.thought == len("still going")


def test_tool_call_deltas_without_an_index(fake_server: Make) -> None:
    server = fake_server(kind="openai")
    server.script(
        Reply(
            raw=(
                event(
                    {
                        "tool_calls": [
                            {"id": "a", "function": {"name": "read_file", "arguments": '{"file_'}}
                        ]
                    }
                ),
                event({"tool_calls": [{"function": {"arguments": 'path": "a.py"}'}}]}),
                event(
                    {
                        "tool_calls": [
                            {
                                "id": "b",
                                "function": {
                                    "name": "read_file",
                                    "arguments": '{"file_path": "b.py"}',
                                },
                            }
                        ]
                    }
                ),
                event({}, "tool_calls"),
                "data: [DONE]\n\n",
            )
        )
    )
    _, done = run(provider_for(server), ask())
    assert [(c.id, dict(c.arguments)) for c in done.message.tool_calls] == [
        ("a", {"file_path": "a.py"}),
        ("b", {"file_path": "b.py"}),
    ]


def test_proxy_variables_do_not_catch_a_server_on_this_machine(
    fake_server: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # a proxy that refuses everything
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = fake_server(kind="llamacpp")
    server.script(text("Direct."))
    chunks, done = run(provider_for(server), ask())
    assert done.message.content == "Direct." and len(server.requests) == 1


def tls_server(fake_server: Make) -> FakeServer:
    server = fake_server(kind="llamacpp")
    assert server._httpd is not None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(DATA / "selfsigned-cert.pem", DATA / "selfsigned-key.pem")
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    return server


def https(server: FakeServer) -> Provider:
    return connect(
        Settings(provider="llamacpp", base_url=server.url.replace("http", "https")), FAST
    )


def test_a_self_signed_certificate_is_named_at_discovery(
    fake_server: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    server = tls_server(fake_server)
    with pytest.raises(ProviderUnreachable) as caught:
        https(server)
    message = str(caught.value)
    assert "TLS certificate could not be verified (self-signed certificate)" in message
    assert "SSL_CERT_FILE" in message and "Nothing answers" not in message


def test_a_trusted_certificate_works_and_an_untrusted_one_fails_clearly_mid_session(
    fake_server: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = tls_server(fake_server)
    server.script(text("Over TLS."))
    monkeypatch.setenv("SSL_CERT_FILE", str(DATA / "selfsigned-cert.pem"))
    _, done = run(https(server), ask())
    assert done.message.content == "Over TLS."
    later = https(server)  # discovery trusts the server...
    monkeypatch.delenv("SSL_CERT_FILE")  # ...the first call (its client is made now) does not
    with pytest.raises(ProviderError, match="TLS certificate could not be verified"):
        run(later, ask())


def test_a_whole_run_ignores_proxy_variables_for_a_local_server(
    fake_server: Make, tmp_path: Path
) -> None:
    """The installed `swival`, in a fresh process: discovery (urllib reads the proxy
    variables once, at its first request) and the chat call both go straight to loopback."""
    server = fake_server(kind="llamacpp")
    server.script(text("Direct."))
    proxy = "http://127.0.0.1:9"
    env = {
        "HTTP_PROXY": proxy,
        "http_proxy": proxy,
        "ALL_PROXY": proxy,
        "all_proxy": proxy,
        "NO_PROXY": "",
        "no_proxy": "",
    }
    result = run_swival(server, tmp_path, "-p", "hi", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Direct." and len(server.requests) == 1


def test_a_character_split_into_escaped_halves_across_chunks_is_whole(fake_server: Make) -> None:
    """A server that cuts `"\\ud83d\\ude00"` (one emoji) between two argument chunks: each
    chunk's JSON decodes to half a character; joined, the call writes the emoji."""
    server = fake_server(kind="lmstudio")
    head = '{"file_path": "a.txt", "content": "smile '
    server.script(
        Reply(
            raw=(
                event(
                    {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "write_file"}}]}
                ),
                event({"tool_calls": [{"index": 0, "function": {"arguments": head + "\ud83d"}}]}),
                event({"tool_calls": [{"index": 0, "function": {"arguments": '\ude00"}'}}]}),
                event({}, "tool_calls"),
                "data: [DONE]\n\n",
            )
        )
    )
    _, done = run(provider_for(server), ask())
    call = done.message.tool_calls[0]
    assert call.arguments_error is None and call.arguments["content"] == "smile 😀"


def test_a_model_the_server_does_not_have_is_named_with_what_it_said(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio")
    said = 'Model "qwen-nope" not found. Please load the model first.'
    server.script(Reply(status=404, body={"error": {"message": said, "code": "model_not_found"}}))
    with pytest.raises(ModelNotFound) as caught:
        run(provider_for(server, model="qwen-nope"), ask())
    message = str(caught.value)
    assert f"has no model 'qwen-nope' (HTTP 404: {said})" in message and "--model" in message
    assert caught.value.exit_code == 3 and len(server.requests) == 1  # not retried


@pytest.mark.parametrize("indent", [None, 2])
def test_a_server_that_ignores_stream_and_sends_one_object(fake_server: Make, indent: Any) -> None:
    server = fake_server(kind="openai")
    whole = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Reading it.",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"file_path": "a.py"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59},
    }
    server.script(Reply(raw=(json.dumps(whole, indent=indent) + "\n",)))
    chunks, done = run(provider_for(server), ask())
    assert "".join(chunks) == "Reading it." == done.message.content
    assert [(c.id, dict(c.arguments)) for c in done.message.tool_calls] == [
        ("c1", {"file_path": "a.py"})
    ]
    assert done.usage is not None and done.usage.prompt_tokens == 50
    assert len(server.requests) == 1


def test_a_stream_that_ends_while_the_model_thinks_is_retried_as_cut(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    thinking = Reply(raw=(event({"reasoning_content": "Let me see"}),))  # then the body ends
    server.script(thinking, contents("Forty-two."))
    items = list(provider_for(server).stream(ask()))
    restarts = [i for i in items if isinstance(i, Restart)]
    assert len(restarts) == 1 and "the stream ended before the reply was complete" in (
        restarts[0].reason
    )
    assert isinstance(items[-1], Completion) and items[-1].message.content == "Forty-two."


def test_content_sent_as_a_list_of_parts(fake_server: Make) -> None:
    server = fake_server(kind="openai")
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
        {"type": "text", "text": "Par"},
    ]
    server.script(
        Reply(
            raw=(
                event({"content": parts}),
                event({"content": [{"type": "text", "text": "ts."}]}),
                event({}, "stop"),
                "data: [DONE]\n\n",
            )
        )
    )
    chunks, done = run(provider_for(server), ask())
    assert "".join(chunks) == "Parts." == done.message.content
