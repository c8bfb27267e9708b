"""A one-shot run on a terminal (the installed `swival` in a real pseudo-terminal): what
it writes on stderr is wrapped at the terminal's width between words, never cut inside a
word by the terminal: the start-up line, a notice, and the final error alike."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")
from tests.e2e import run_swival  # noqa: E402
from tests.fakeserver import FakeServer, text  # noqa: E402

SWIVAL = shutil.which("swival")
COLUMNS = 50
ESCAPES = re.compile("\x1b\\[[0-9;]*m")
pytestmark = [
    pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps"),
    pytest.mark.timeout(60),
]


def one_shot(root: Path, *args: str) -> list[str]:
    """The lines a one-shot run wrote on a COLUMNS-wide terminal, escapes removed."""
    env = {**os.environ, "HOME": str(root), "XDG_CONFIG_HOME": str(root / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": "24"}
    child = pexpect.spawn(SWIVAL, list(args), cwd=str(root), env=env, encoding="utf-8",
                          dimensions=(24, COLUMNS), timeout=30)
    child.expect(pexpect.EOF)
    return [ESCAPES.sub("", line).rstrip() for line in child.before.split("\r\n")]


def assert_wrapped_between_words(lines: list[str], said: str) -> None:
    """`said` is on consecutive lines, none wider than the terminal, broken only where
    it had a space."""
    first = next(i for i, line in enumerate(lines) if line and said.startswith(line))
    taken = lines[first:first + 1]
    while len(" ".join(taken)) < len(said):
        taken.append(lines[first + len(taken)])
    assert " ".join(taken) == said, lines
    assert len(taken) > 1 and all(len(line) <= COLUMNS for line in taken), taken


def test_the_start_line_and_a_notice_wrap_between_words(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    with FakeServer(kind="llamacpp", window=4096) as server:
        server.script(text("Hi."), text("Hi."))
        args = ("--provider", "llamacpp", "--base-url", server.url, "-p", "hi")
        piped = run_swival(None, tmp_path, *args).stderr.splitlines()  # whole lines
        lines = one_shot(tmp_path, *args)
    assert piped[0].startswith("swival · llamacpp") and "shorten AGENTS.md" in piped[1]
    for said in piped:
        assert_wrapped_between_words(lines, said)
    assert lines[-2:] == ["Hi.", ""]


def test_the_final_error_wraps_between_words(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    args = ("--provider", "llamacpp", "--base-url", "http://127.0.0.1:9", "-p", "hi")
    piped = run_swival(None, tmp_path, *args).stderr.splitlines()
    assert len(piped) == 1 and piped[0].startswith("swival: Nothing answers at")
    assert_wrapped_between_words(one_shot(tmp_path, *args), piped[0])


def test_control_characters_in_the_answer_are_shown_not_obeyed(tmp_path: Path) -> None:
    """On a terminal the answer's escape sequences are printed as text (`\\x1b[2J` would
    clear the screen); into a pipe the answer goes out as the model wrote it."""
    answer = "Done.\x1b[2J\x1b]0;owned\x07 Bye."
    with FakeServer(kind="llamacpp", window=16_384) as server:
        server.script(text(answer), text(answer))
        args = ("--provider", "llamacpp", "--base-url", server.url, "-q", "-p", "hi")
        lines = one_shot(tmp_path, *args)
        piped = run_swival(None, tmp_path, *args).stdout
    assert "Done.\\x1b[2J\\x1b]0;owned\\x07 Bye." in lines
    assert piped == answer + "\n"
