"""connect(): URL forms, model discovery and the real window for every server kind, and the
clear errors when nothing answers or nothing is loaded. All against the loopback fake."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swival.config import Settings
from swival.errors import ModelNotFound, ProviderUnreachable, UsageError
from swival.providers.factory import (
    CONFIGURED_WINDOW_SOURCE,
    connect,
    hosted_model,
    split_base_url,
)
from tests.fakeserver import FakeServer

Make = Callable[..., FakeServer]


def settings(**kw: Any) -> Settings:
    return Settings(**kw)


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(("given", "root", "api"), [
    ("http://127.0.0.1:1234", "http://127.0.0.1:1234", "http://127.0.0.1:1234/v1"),
    ("http://127.0.0.1:1234/v1/", "http://127.0.0.1:1234", "http://127.0.0.1:1234/v1"),
    ("localhost:8080", "http://localhost:8080", "http://localhost:8080/v1"),
    ("http://127.0.0.1:8080/v1/chat/completions", "http://127.0.0.1:8080",
     "http://127.0.0.1:8080/v1"),
])
def test_base_url_accepts_root_or_v1(given: str, root: str, api: str) -> None:
    assert split_base_url(given) == (root, api)


def test_llamacpp_model_and_window_from_props(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp", window=6144, model="smollm2")
    provider = connect(settings(provider="llamacpp", base_url=server.v1_url))
    info = provider.info
    assert (info.model, info.window.tokens, info.base_url) == ("smollm2", 6144, server.url)
    assert "/props" in info.window.source and info.model_source == "served by llama.cpp"
    assert info.window.confirmed_tokens == 6144  # the server said so: never unlearned


def test_lmstudio_v1_loaded_model_and_context(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio", window=16384, model="qwen2.5-coder-7b-instruct")
    info = connect(settings(provider="lmstudio", base_url=server.url)).info
    assert (info.model, info.window.tokens) == ("qwen2.5-coder-7b-instruct", 16384)
    assert "/api/v1/models" in info.window.source and info.window.confirmed


def test_lmstudio_falls_back_to_v0(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio", window=12000, lmstudio_api="v0")
    info = connect(settings(provider="lmstudio", base_url=server.url)).info
    assert info.window.tokens == 12000 and "/api/v0/models" in info.window.source


def test_lmstudio_without_native_api_has_unknown_window(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio", lmstudio_api="none")
    info = connect(settings(provider="lmstudio", base_url=server.url)).info
    assert info.window.tokens is None and info.window.budget_tokens == 8192
    assert info.model == "test-model"


def test_lmstudio_nothing_loaded_says_what_to_do(fake_server: Make) -> None:
    server = fake_server(kind="lmstudio", loaded=False)
    with pytest.raises(ModelNotFound, match="no model loaded.*--model"):
        connect(settings(provider="lmstudio", base_url=server.url))


def test_configured_window_wins(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp", window=32768)
    info = connect(settings(provider="llamacpp", base_url=server.url,
                            max_context_tokens=8000)).info
    assert info.window.tokens == 8000 and info.window.source == CONFIGURED_WINDOW_SOURCE
    assert info.window.confirmed_tokens == 0  # a setting, not the server's word


def test_generic_first_model_and_unknown_window(fake_server: Make) -> None:
    server = fake_server(kind="openai", model="served-model")
    info = connect(settings(provider="generic", base_url=server.v1_url)).info
    assert info.model == "served-model" and info.window.tokens is None
    assert "--max-context-tokens" in info.window.source


def test_generic_needs_a_url() -> None:
    with pytest.raises(UsageError, match="--base-url"):
        connect(settings(provider="generic", model="local-thing"))


def test_ollama_running_model_and_context(fake_server: Make) -> None:
    server = fake_server(kind="ollama", model="qwen2.5-coder:7b", window=16384)
    info = connect(settings(provider="ollama", base_url=server.url)).info
    assert (info.model, info.window.tokens) == ("qwen2.5-coder:7b", 16384)
    assert "/api/ps" in info.window.source and info.model_source == "running in Ollama"


def test_ollama_nothing_running_lists_installed(fake_server: Make) -> None:
    server = fake_server(kind="ollama", loaded=False,
                         installed=("qwen2.5-coder:7b", "llama3.2:3b"))
    with pytest.raises(ModelNotFound) as err:
        connect(settings(provider="ollama", base_url=server.url))
    text = str(err.value)
    assert "qwen2.5-coder:7b, llama3.2:3b" in text and "--model qwen2.5-coder:7b" in text


def test_ollama_named_model_uses_num_ctx_parameter(fake_server: Make) -> None:
    server = fake_server(kind="ollama", loaded=False, installed=("coder:latest",),
                         param_num_ctx=12288)
    info = connect(settings(provider="ollama", base_url=server.url, model="coder")).info
    assert info.window.tokens == 12288 and "num_ctx" in info.window.source


def test_ollama_default_is_capped_by_trained_maximum(fake_server: Make) -> None:
    server = fake_server(kind="ollama", loaded=False, installed=("tiny:latest",), trained=2048)
    info = connect(settings(provider="ollama", base_url=server.url, model="tiny")).info
    assert info.window.tokens == 2048 and "trained maximum" in info.window.source


def test_ollama_default_when_nothing_says(fake_server: Make) -> None:
    server = fake_server(kind="ollama", loaded=False, installed=("m:latest",), trained=None)
    info = connect(settings(provider="ollama", base_url=server.url, model="m")).info
    assert info.window.tokens == 4096 and "OLLAMA_CONTEXT_LENGTH" in info.window.source


def test_ollama_missing_named_model(fake_server: Make) -> None:
    server = fake_server(kind="ollama", installed=("a:latest",))
    with pytest.raises(ModelNotFound, match="no model named 'b'.*ollama pull b"):
        connect(settings(provider="ollama", base_url=server.url, model="b"))


@pytest.mark.parametrize("provider", ["lmstudio", "llamacpp", "ollama", "generic"])
def test_dead_server_is_one_clear_paragraph(provider: str) -> None:
    url = dead_url()
    start = time.monotonic()
    with pytest.raises(ProviderUnreachable) as err:
        connect(settings(provider=provider, base_url=url))
    message = str(err.value)
    assert url.split("//")[1] in message and "Start" in message and "\n" not in message
    assert err.value.exit_code == 3 and time.monotonic() - start < 3


def test_hosted_model_strings() -> None:
    assert hosted_model(settings(provider="generic", model="openai/gpt-4o-mini"))
    assert hosted_model(settings(model="openrouter/qwen/qwen-2.5-coder-32b-instruct"))
    # LM Studio model keys use publisher prefixes such as openai/: stay local by default.
    assert not hosted_model(settings(model="openai/gpt-oss-20b"))
    assert not hosted_model(settings(model="deepseek/deepseek-r1-0528-qwen3-8b"))
    assert hosted_model(settings(provider="generic", model="deepseek/deepseek-chat"))
    assert not hosted_model(settings(provider="generic", model="openai/x",
                                     base_url="http://127.0.0.1:9"))


def test_hosted_connect_probes_nothing() -> None:
    provider = connect(settings(provider="generic", model="openrouter/meta/llama-3-8b",
                                api_key="sk-or-test"))
    assert provider.info.model == "openrouter/meta/llama-3-8b"
    assert provider.info.window.tokens is None


def test_connect_does_not_import_litellm(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    code = (
        "import sys; from swival.config import Settings; "
        "from swival.providers.factory import connect; "
        f"connect(Settings(provider='llamacpp', base_url='{server.url}')); "
        "print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=30, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False", out.stderr
