"""The harness's own time per turn against an instant model (rows of benchmarks/startup.py):
in-process with the scripted provider, and through the direct HTTP transport to the
loopback fake server. Each turn is 3 model calls and 2 tools."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.scenarios import workspace
from tests.fakeserver import FakeServer, Reply
from tests.scripted import ScriptedProvider, call, reply


def in_process_turns(turns: int) -> list[float]:
    """Agent + context engine + real tools against an instant scripted model."""
    from tests.test_repl_logic import make_session

    root = Path(tempfile.mkdtemp(prefix="swival-bench-"))
    workspace(root)
    provider = ScriptedProvider([], window=32_768)
    session = make_session(root, provider)

    def script() -> None:
        provider.add(call("read_file", file_path="shop/pricing.py"),
                     call("grep", pattern="def order_total"), reply("Done.", usage=(900, 5)))

    return _time_turns(turns, script, session.agent.run_turn)


def loopback_turns(server: FakeServer, turns: int) -> list[float]:
    """The same turn through the direct HTTP transport to the loopback fake server."""
    from swival.config import load_settings
    from swival.session import open_session

    root = Path(tempfile.mkdtemp(prefix="swival-bench-"))
    (root / ".git").mkdir()
    workspace(root)
    old = Path.cwd()
    os.chdir(root)
    try:
        settings = load_settings({"provider": "llamacpp", "base_url": server.url},
                                 config_path=None)
        session = open_session(settings, interactive=False)

        def script() -> None:
            server.script(Reply(tool_calls=(("read_file", {"file_path": "shop/pricing.py"}),)),
                          Reply(tool_calls=(("grep", {"pattern": "def order_total"}),)),
                          Reply(text="Done."))

        server.script(Reply(text="warm"))
        list(session.agent.run_turn("warm the connection"))  # loads httpx and the tokenizer
        return _time_turns(turns, script, session.agent.run_turn)
    finally:
        os.chdir(old)


def _time_turns(turns: int, script: Callable[[], None],
                run_turn: Callable[[str], object]) -> list[float]:
    times = []
    for i in range(turns):
        script()
        started = time.perf_counter()
        for _event in run_turn(f"request {i}"):  # type: ignore[attr-defined]
            pass
        times.append(time.perf_counter() - started)
    return times
