"""The REPL's start-up question about a project's keys that need trust, in a real
pseudo-terminal with the installed `swival`: it shows the file, the keys and their values
before connecting; "no" keeps them out, "yes" applies them and is remembered."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")
fakeserver = pytest.importorskip("tests.fakeserver")

PROMPT = "›"
SWIVAL = shutil.which("swival")
QUESTION = "Trust this project and apply them?"
SECRET = "kept-outside-the-workspace"
pytestmark = [
    pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps"),
    pytest.mark.timeout(120),
]


@pytest.fixture
def server() -> Iterator[object]:
    with fakeserver.FakeServer(kind="llamacpp", window=16_384) as srv:
        yield srv


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "notes.txt").write_text(SECRET + "\n")
    return folder


@pytest.fixture
def project(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "swival.toml").write_text(f'add_dir_ro = ["{outside}"]\nmax_turns = 5\n')
    return root


def spawn(server: object, project: Path) -> object:
    env = {**os.environ, "HOME": str(project), "XDG_CONFIG_HOME": str(project / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    child = pexpect.spawn(SWIVAL, ["--provider", "llamacpp", "--base-url", server.url],
                          cwd=str(project), env=env, encoding="utf-8", dimensions=(40, 120),
                          timeout=60)
    child.logfile_read = sys.stdout if os.environ.get("SWIVAL_PTY_LOG") else None
    return child


def read_outside(child: object, server: object, outside: Path) -> str:
    """Ask the fake model to read the outside file; return what the tool gave back."""
    server.script(fakeserver.tool("read_file", file_path=str(outside / "notes.txt")),
                  fakeserver.text("Read done."))
    child.send("read the notes\r")
    child.expect_exact("Read done.")
    child.expect_exact(PROMPT)
    return str(server.requests[-1]["messages"][-1]["content"])


def leave(child: object) -> None:
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_question_answered_no_then_yes_then_remembered(
        server: object, project: Path, outside: Path) -> None:
    child = spawn(server, project)
    child.expect_exact(QUESTION)
    shown = child.before
    assert str(project / "swival.toml") in shown and f'add_dir_ro = ["{outside}"]' in shown
    assert "max_turns" not in shown  # safe keys are not part of the question
    assert server.hits == []  # asked before connecting
    child.send("n\r")
    child.expect_exact("Continuing without them")
    child.expect_exact(PROMPT)
    result = read_outside(child, server, outside)
    assert "outside the workspace" in result and SECRET not in result
    leave(child)

    child = spawn(server, project)
    child.expect_exact(QUESTION)
    child.send("y\r")
    child.expect_exact(PROMPT)
    assert SECRET in read_outside(child, server, outside)
    leave(child)

    child = spawn(server, project)
    child.expect_exact(PROMPT)
    assert QUESTION not in child.before
    assert SECRET in read_outside(child, server, outside)
    leave(child)
