"""Against a real llama.cpp `llama-server` with SmolLM2-135M (opt-in).

Run with `scripts/llamacpp.sh test`, which builds and caches the server and sets
SWIVAL_LLAMACPP_BIN and SWIVAL_LLAMACPP_MODEL; without them every test here is skipped. The
model is far too small to drive tools; these tests check the server-facing facts: discovery
and the window from the live /props, a streamed plain answer, usage figures, and the live
overflow error classified with a deliberately small window.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from swival.config import Settings
from swival.errors import ContextOverflowError
from swival.messages import Message
from swival.providers.base import ChatRequest, Completion, Provider, TextChunk, complete
from swival.providers.factory import connect

pytestmark = pytest.mark.llamacpp
WINDOW = 1024  # small on purpose, so an overflow is cheap to provoke


def _paths() -> tuple[Path, Path] | None:
    binary, model = os.environ.get("SWIVAL_LLAMACPP_BIN"), os.environ.get("SWIVAL_LLAMACPP_MODEL")
    if not binary or not model or not Path(binary).is_file() or not Path(model).is_file():
        return None
    return Path(binary), Path(model)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("llama-server did not become ready")


@pytest.fixture(scope="module")
def live_url() -> Iterator[str]:
    paths = _paths()
    if paths is None:
        pytest.skip("set SWIVAL_LLAMACPP_BIN/SWIVAL_LLAMACPP_MODEL (scripts/llamacpp.sh test)")
    binary, model = paths
    port = _free_port()
    proc = subprocess.Popen(
        [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
         "-c", str(WINDOW), "--jinja", "-t", "2", "-np", "1", "--alias", "smollm2-135m"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def provider(live_url: str) -> Provider:
    return connect(Settings(provider="llamacpp", base_url=live_url + "/v1", retries=0))


def test_discovery_and_window_from_live_props(provider: Provider, live_url: str) -> None:
    info = provider.info
    print(f"\nlive: model={info.model!r} window={info.window.describe()} url={info.base_url}")
    assert info.window.tokens == WINDOW and "/props" in info.window.source
    assert info.model and info.base_url == live_url


def test_streamed_plain_answer_with_usage(provider: Provider) -> None:
    request = ChatRequest([Message("user", "What is the capital of France? One word.")],
                          max_output_tokens=16, temperature=0.0, estimated_prompt_tokens=20)
    chunks: list[str] = []
    done: Completion | None = None
    for item in provider.stream(request):
        if isinstance(item, TextChunk):
            chunks.append(item.text)
        else:
            done = item
    assert done is not None and done.usage is not None
    print(f"\nlive answer: {done.message.content!r} usage={done.usage} "
          f"finish={done.finish_reason} chunks={len(chunks)}")
    assert "".join(chunks) == done.message.content and done.message.content.strip()
    assert done.usage.prompt_tokens > 5 and 0 < done.usage.completion_tokens <= 16


def test_direct_transport_reads_the_reused_prompt_from_the_cache(provider: Provider) -> None:
    request = ChatRequest([Message("user", "Name a colour. One word.")], max_output_tokens=8,
                          temperature=0.0)
    complete(provider, request)
    again = complete(provider, request)  # the same prompt: llama.cpp reuses its KV cache
    print(f"\nlive repeat: usage={again.usage}")
    assert again.usage is not None and again.usage.cached_tokens is not None
    assert 0 < again.usage.cached_tokens <= again.usage.prompt_tokens
    assert "litellm" not in sys.modules  # a local server never loads it


def test_live_overflow_is_classified(provider: Provider) -> None:
    filler = "The quick brown fox jumps over the lazy dog. " * 300  # ~3000 tokens
    request = ChatRequest([Message("user", filler + "Summarise.")], max_output_tokens=16,
                          estimated_prompt_tokens=3000)
    with pytest.raises(ContextOverflowError) as err:
        for _ in provider.stream(request):
            pass
    print(f"\nlive overflow: kind={err.value.kind} prompt_tokens={err.value.prompt_tokens} "
          f"window={err.value.window}: {err.value}")
    assert err.value.kind == "rejected" and err.value.window == WINDOW
    assert err.value.prompt_tokens is not None and err.value.prompt_tokens > WINDOW


def test_tool_schemas_the_template_ignores_are_not_an_overflow(provider: Provider) -> None:
    # SmolLM2's chat template does not render tools, so the server counts far fewer prompt
    # tokens than we send; that must not be mistaken for a silently truncated prompt.
    tools = [{"type": "function", "function": {
        "name": f"tool_{i}", "description": "Does one thing to one file, carefully. " * 5,
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
        for i in range(6)]
    request = ChatRequest([Message("user", "Say hello.")], tools=tools, max_output_tokens=16,
                          estimated_prompt_tokens=450)
    done = [item for item in provider.stream(request) if isinstance(item, Completion)][0]
    print(f"\nlive with ignored tools: usage={done.usage}")
    assert done.usage is not None and done.usage.prompt_tokens < 225


def test_exact_count_is_what_the_server_counts_and_cheap(provider: Provider) -> None:
    """count_prompt (/apply-template, then /tokenize) gives the very figure the server
    reports for the same request, tools included, in a few milliseconds."""
    tools = [{"type": "function", "function": {
        "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
    count = provider.count_prompt  # type: ignore[attr-defined]
    for with_tools in ((), tools):
        messages = [Message("system", "You are terse."),
                    Message("user", "List three primes. " * 20)]
        started = time.perf_counter()
        counted = count(messages, with_tools)
        took = (time.perf_counter() - started) * 1000
        done = complete(provider, ChatRequest(messages, tools=with_tools, max_output_tokens=4,
                                              temperature=0.0))
        print(f"\nlive exact count: {counted} (server {done.usage}) in {took:.1f} ms")
        assert done.usage is not None and counted == done.usage.prompt_tokens
        assert took < 250


def test_exact_count_cost_by_prompt_size(provider: Provider) -> None:
    """What an exact count costs (median of 10) for prompts of about 360, 3,400 and
    11,900 SmolLM2 tokens; the engine asks only near its compaction trigger."""
    for lines in (20, 200, 700):
        messages = [Message("system", "You are terse."),
                    Message("user", "def f(x): return x + 1  # a line of code\n" * lines)]
        times = []
        for _ in range(10):
            started = time.perf_counter()
            counted = provider.count_prompt(messages, ())  # type: ignore[attr-defined]
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        print(f"\nlive exact count of {counted} tokens: median {times[5]:.1f} ms, "
              f"max {times[-1]:.1f} ms")
        assert counted and times[5] < 100
