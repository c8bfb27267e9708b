"""Offline: a fresh process with every non-loopback connection (and DNS lookup) refused, no
tokenizer cache configured and no litellm environment set, runs full streamed tool-call
requests through litellm to the loopback fake, and nothing tries to leave the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.fakeserver import FakeServer, text, tools

Make = Callable[..., FakeServer]
ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
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

from swival.config import Settings
from swival.messages import Message
from swival.providers.base import ChatRequest, complete
from swival.providers.factory import connect, warm_up

warm_up()
tools = [{"type": "function", "function": {"name": "read_file", "description": "Read",
          "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}}}]
provider = connect(Settings(provider="llamacpp", base_url=sys.argv[1]))
first = complete(provider, ChatRequest([Message("user", "read a.py")], tools=tools))
second = complete(provider, ChatRequest([Message("user", "and now?")], tools=tools))
print(json.dumps({
    "attempts": attempts,
    "call": [first.message.tool_calls[0].name, dict(first.message.tool_calls[0].arguments)],
    "answer": second.message.content,
    "usage": [second.usage.prompt_tokens, second.usage.completion_tokens]
             if second.usage else None,
}))
"""


def test_full_tool_call_round_with_the_network_blocked(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(tools([("read_file", {"file_path": "a.py"})], arg_chunk=4),
                  text("It prints hello.", send_usage=False))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LITELLM", "TIKTOKEN")) and not k.endswith("_PROXY")}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", CHILD, server.url], capture_output=True,
                         text=True, timeout=90, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["attempts"] == []
    assert result["call"] == ["read_file", {"file_path": "a.py"}]
    assert result["answer"] == "It prints hello."
    assert "Give Feedback" not in out.stderr and "LiteLLM" not in out.stderr
