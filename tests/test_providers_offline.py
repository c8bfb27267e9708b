"""Offline: fresh processes with every non-loopback connection (and DNS lookup) refused, no
tokenizer cache configured and no litellm environment set, run full streamed tool-call
requests to the loopback fake, and nothing tries to leave the machine.

A local server goes through the direct httpx transport and never imports litellm. The
litellm path that hosted models use is checked the same way, under the same guard
(tests/netguard.py), in tests/test_hosted.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakeserver import FakeServer, text, tools

Make = Callable[..., FakeServer]
ROOT = Path(__file__).resolve().parents[1]

LOCAL = r"""
import json, sys

from tests import netguard

netguard.install()
attempts = netguard.ATTEMPTS

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

from swival.config import Settings
from swival.providers.factory import connect, warm_up

provider = connect(Settings(provider="llamacpp", base_url=sys.argv[1]))
warm_up(provider)
result = exchange(provider)
result["litellm_loaded"] = "litellm" in sys.modules
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
