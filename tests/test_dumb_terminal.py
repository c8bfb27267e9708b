"""TERM=dumb in a 60-column pseudo-terminal: the installed `swival` still draws within
the screen's width, and its prompt writes no escape sequences. rich assumes 80 columns
on a dumb terminal; without asking the terminal its real size, answers, tables, /help
and tool lines came out wider than the screen and wrapped into broken lines."""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")
from tests.fakeserver import FakeServer, text, tool  # noqa: E402

SWIVAL = shutil.which("swival")
ESCAPES = re.compile("\x1b\\[[0-9;?]*[a-zA-Z]")
WIDTH = 60
ANSWER = ("A table:\n\n| name | what it does |\n|---|---|\n| parse | "
          + "reads the input and builds the tree " * 3 + "|\n\nThe end of the answer.")
pytestmark = [
    pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps"),
    pytest.mark.timeout(60),
]


def widest(shown: str) -> list[str]:
    """The lines drawn wider than the terminal (each piece a carriage return starts)."""
    pieces = [piece for line in ESCAPES.sub("", shown).split("\n")
              for piece in line.split("\r")]
    return [piece for piece in pieces if len(piece) > WIDTH]


def spawn(server: FakeServer, root: Path, *args: str) -> object:
    env = {**os.environ, "HOME": str(root), "XDG_CONFIG_HOME": str(root / ".config"),
           "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    child = pexpect.spawn(SWIVAL, ["--provider", "llamacpp", "--base-url", server.url,
                                   "--commands", "all", *args], cwd=str(root), env=env,
                          encoding="utf-8", dimensions=(40, WIDTH), timeout=30)
    child.logfile_read = io.StringIO()  # everything drawn
    return child


def test_the_repl_fits_a_narrow_dumb_terminal(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    with FakeServer(kind="llamacpp", window=16_384) as server:
        server.script(tool("run_command", command="echo " + "word " * 20), text(ANSWER))
        child = spawn(server, tmp_path)
        child.expect_exact("›")
        child.send("go\r")
        child.expect_exact("The end of the answer.")
        child.expect_exact("›")
        child.send("/help\r")
        child.expect_exact("leave (or /quit)")
        child.expect_exact("›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    shown = child.logfile_read.getvalue()
    assert "parse" in shown and "/compact" in shown
    assert not widest(shown), widest(shown)
    # prompt_toolkit's plain prompt: no cursor moves, erasures, bracketed paste or colours
    # (the Ctrl-D sent the moment the prompt appeared was not lost either)
    assert not re.findall("\x1b\\[[0-9;]*[ABCDJKm]|\x1b\\[\\?2004", shown)


def test_a_one_shot_run_fits_a_narrow_dumb_terminal(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    with FakeServer(kind="llamacpp", window=16_384) as server:
        server.script(tool("run_command", command="echo " + "word " * 20), text("Done."))
        child = spawn(server, tmp_path, "-p", "go")
        child.expect(pexpect.EOF)
    shown = child.logfile_read.getvalue()
    assert "run_command" in shown and "Done." in shown
    assert not widest(shown), widest(shown)
