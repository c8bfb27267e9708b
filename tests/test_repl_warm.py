"""The REPL's warm-up (swival/repl/warm.py): what only the answer needs loads after a
waiting request has reached the model, so the two never take turns on the interpreter
lock; with no request waiting it loads as soon as the request could go."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from swival.providers.base import ChatRequest
from swival.repl import Repl, ReplIO
from swival.repl.warm import WarmUp
from tests.scripted import ScriptedProvider, reply
from tests.test_repl_logic import CTRL_D, make_session


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_a_waiting_request_reaches_the_model_before_the_later_load(root: Path) -> None:
    seen: list[float] = []
    later: list[float] = []

    def model(_request: ChatRequest) -> object:
        seen.append(time.monotonic())
        time.sleep(0.2)  # the model thinks; the later load may run meanwhile
        return reply("ok")

    console = io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text(f"early\r{CTRL_D}")  # typed before the warm-up is over
        Repl(
            make_session(root, ScriptedProvider([model])),
            ReplIO(
                input=pipe,
                output=DummyOutput(),
                console_file=console,
                width=100,
                color=False,
                warm_up=lambda: time.sleep(0.2),
                later=lambda: later.append(time.monotonic()),
            ),
        ).run()
    assert "ok" in console.getvalue()
    assert seen and later and later[0] >= seen[0]


def test_with_no_request_waiting_the_later_load_runs_at_once() -> None:
    done = threading.Event()
    warm = WarmUp(lambda: None, lambda: None, done.set)
    warm.start()
    assert done.wait(5)
    assert warm.ready


def test_a_request_that_is_never_sent_still_releases_the_later_load() -> None:
    done = threading.Event()
    warm = WarmUp(lambda: None, lambda: None, done.set)
    assert warm.wait() is None  # a request waited
    assert not done.wait(0.2)  # held back while it is (not yet) sent
    warm.sent()  # e.g. Ctrl-C before the model call, or a slash command
    assert done.wait(5)
