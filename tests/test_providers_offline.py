"""Offline: fresh processes with every non-loopback connection (and DNS lookup) refused, no
tokenizer cache configured and no litellm environment set, run full streamed tool-call
requests to the loopback fake, and nothing tries to leave the machine.

- A local server goes through the direct httpx transport and never imports litellm.
- The litellm path that hosted models use talks to the loopback fake here (a hosted-style
  provider given the fake's URL as its API base), after its warm-up; its offline price map
  gives a hosted model's window and the cost of the calls.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakeserver import FakeServer, text, tools

Make = Callable[..., FakeServer]
ROOT = Path(__file__).resolve().parents[1]

GUARD = r"""
import ipaddress, json, socket, sys

attempts = []
real_connect = socket.socket.connect
real_getaddrinfo = socket.getaddrinfo

def loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"

def guarded_connect(self, address):
    if isinstance(address, tuple) and not loopback(address[0]):
        attempts.append(str(address))
        raise OSError("blocked by test guard")
    return real_connect(self, address)

def guarded_getaddrinfo(host, *args, **kwargs):
    if host is not None and not loopback(str(host)):
        attempts.append(f"dns:{host}")
        raise socket.gaierror("blocked by test guard")
    return real_getaddrinfo(host, *args, **kwargs)

socket.socket.connect = guarded_connect
socket.getaddrinfo = guarded_getaddrinfo

from swival.messages import Message
from swival.providers.base import ChatRequest, complete

tools = [{"type": "function", "function": {"name": "read_file", "description": "Read",
          "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}}}]

def exchange(provider):
    first = complete(provider, ChatRequest([Message("user", "read a.py")], tools=tools))
    second = complete(provider, ChatRequest([Message("user", "and now?")], tools=tools))
    return {
        "attempts": attempts,
        "call": [first.message.tool_calls[0].name, dict(first.message.tool_calls[0].arguments)],
        "answer": second.message.content,
        "usage": [second.usage.prompt_tokens, second.usage.completion_tokens]
                 if second.usage else None,
    }
"""

LOCAL = GUARD + r"""
from swival.config import Settings
from swival.providers.factory import connect, warm_up

provider = connect(Settings(provider="llamacpp", base_url=sys.argv[1]))
warm_up(provider)
result = exchange(provider)
result["litellm_loaded"] = "litellm" in sys.modules
print(json.dumps(result))
"""

HOSTED = GUARD + r"""
from swival.messages import Usage
from swival.providers.base import ProviderInfo
from swival.providers.factory import spent
from swival.providers.hosted import CallConfig, HostedProvider
from swival.providers.pricemap import hosted_window
from swival.providers.wire import Limits
from swival.providers.streaming import RetryPolicy

window = hosted_window("openai/gpt-4o-mini")
info = ProviderInfo("openai", "(hosted)", "gpt-4o-mini", window)
call = CallConfig("openai/gpt-4o-mini", sys.argv[1] + "/v1", "sk-test-key", Limits(30.0, 30.0))
provider = HostedProvider(info, RetryPolicy(retries=1, backoff=0.01), call)
provider.warm()  # its rehearsals of the first call must not leave the machine either
result = exchange(provider)
result["window"] = [window.tokens, window.source]
result["unknown_window"] = hosted_window("openrouter/nobody/no-such-model").tokens
result["spent"] = spent(provider)
result["priced"] = provider.cost(Usage(1_000_000, 0))

from swival.commands import dispatch
from swival.config import Settings
from swival.session import build_session

session = build_session(Settings(project_root=__import__("pathlib").Path(sys.argv[2])),
                        provider, interactive=False)
for _ in session.agent.run_turn("say hi"):
    pass
result["context_footer"] = dispatch("/context", session.agent).footer
result["mcp_sdk_loaded"] = "mcp" in sys.modules  # litellm can use it; a hosted call must not
print(json.dumps(result))
"""


def run_child(code: str, server: FakeServer, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LITELLM", "TIKTOKEN")) and not k.endswith("_PROXY")}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code, server.url, *args], capture_output=True,
                         text=True, timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Give Feedback" not in out.stderr and "LiteLLM" not in out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def script(server: FakeServer) -> None:
    server.script(tools([("read_file", {"file_path": "a.py"})], arg_chunk=4),
                  text("It prints hello.", usage=(40, 5)))


def test_local_round_offline_without_litellm(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    script(server)
    result = run_child(LOCAL, server)
    assert result["attempts"] == []
    assert result["call"] == ["read_file", {"file_path": "a.py"}]
    assert result["answer"] == "It prints hello." and result["usage"] == [40, 5]
    assert result["litellm_loaded"] is False


def test_hosted_path_through_litellm_offline(fake_server: Make, tmp_path: Path) -> None:
    server = fake_server(kind="openai", model="gpt-4o-mini")
    script(server)
    server.script(text("Hi.", usage=(2000, 3)))
    result = run_child(HOSTED, server, str(tmp_path))
    assert result["attempts"] == []
    assert result["call"] == ["read_file", {"file_path": "a.py"}]
    assert result["answer"] == "It prints hello." and result["usage"] == [40, 5]
    assert result["window"][0] == 128_000 and "price map" in result["window"][1]
    assert result["unknown_window"] is None
    assert result["priced"] > 0 and 0 < result["spent"] < result["priced"]
    assert server.requests[0]["model"] == "gpt-4o-mini"
    assert re.search(r"Cost so far: \$0\.0\d{3} \(litellm's bundled price map\)",
                     result["context_footer"])
    assert result["mcp_sdk_loaded"] is False
