"""Session control in the installed `swival`, in a real pseudo-terminal against the
loopback fake server: @mentions (Tab completion and the attached file), /undo, --edits
ask, /model with two models of different windows (and Ollama names that look like
markup), and /plan."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_repl_pty import PROMPT, SWIVAL, ask, spawn

pexpect = pytest.importorskip("pexpect")
fakeserver = pytest.importorskip("tests.fakeserver")
pytestmark = [
    pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps"),
    pytest.mark.timeout(90),
]
TAB = "\t"


@pytest.fixture
def server() -> Iterator[object]:
    with fakeserver.FakeServer(kind="llamacpp", window=16_384) as srv:
        yield srv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "parser.py").write_text("def parse():\n    return 'v1'\n")
    return tmp_path


def leave(child: object) -> None:
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_mention_completes_attaches_and_undo_reverts_the_edit(
        server: object, project: Path) -> None:
    server.script(
        fakeserver.Reply(tool_calls=[("edit_file", {"file_path": "src/parser.py",
                                                    "old_string": "'v1'",
                                                    "new_string": "'v2'"})]),
        fakeserver.Reply(text="Bumped the parser to v2."),
        fakeserver.Reply(text="Noted."))
    child = spawn(server, project)
    child.send("bump @src/pa" + TAB)
    child.expect_exact("rser.py")  # Tab wrote the rest of the name
    child.send("\r")
    child.expect_exact("Attached @src/parser.py (2 lines).")
    child.expect_exact("Bumped the parser to v2.")
    child.expect_exact(PROMPT)
    assert "'v2'" in (project / "src" / "parser.py").read_text()
    first = server.requests[0]["messages"][-1]["content"]
    assert first.startswith("bump @src/parser.py") and "2\t    return 'v1'" in first

    ask(child, "/undo")
    child.expect_exact('Undid the file edits of "bump @src/parser.py": restored src/parser.py.')
    child.expect_exact(PROMPT)
    assert (project / "src" / "parser.py").read_text() == "def parse():\n    return 'v1'\n"
    ask(child, "ok?")
    child.expect_exact("Noted.")
    child.expect_exact(PROMPT)
    assert "[The user ran /undo" in server.requests[-1]["messages"][-1]["content"]
    ask(child, "/undo")
    child.expect_exact("Nothing to undo")
    child.expect_exact(PROMPT)
    leave(child)


def test_edits_ask_shows_the_diff_and_asks(server: object, project: Path) -> None:
    server.script(
        fakeserver.Reply(tool_calls=[("write_file", {"file_path": "NEWS.md",
                                                     "content": "# News\n"})]),
        fakeserver.Reply(tool_calls=[("write_file", {"file_path": "BAD.md",
                                                     "content": "bad\n"})]),
        fakeserver.Reply(text="One written, one declined."))
    child = spawn(server, project, "--edits", "ask")
    ask(child, "write the news")
    child.expect_exact("+# News")
    child.expect_exact("Create NEWS.md?")
    child.expect_exact("[y]es once / [a]lways allow NEWS.md / [s] always allow every file / "
                       "[n]o")
    child.send("y\r")
    child.expect_exact("Create BAD.md?")
    child.send("n\r")
    child.expect_exact("One written, one declined.")
    child.expect_exact(PROMPT)
    assert (project / "NEWS.md").read_text() == "# News\n"
    assert not (project / "BAD.md").exists()
    leave(child)


def test_model_lists_and_switches_between_two_windows(project: Path) -> None:
    with fakeserver.FakeServer(kind="lmstudio", model="big-coder", window=16_384,
                               others={"small-coder": 4096}) as srv:
        srv.script(fakeserver.Reply(text="On the big one."),
                   fakeserver.Reply(text="On the small one."))
        child = spawn(srv, project, "--provider", "lmstudio")  # the last --provider wins
        ask(child, "hello")
        child.expect_exact("On the big one.")
        child.expect_exact(PROMPT)
        ask(child, "/model")
        child.expect_exact("big-coder (current)")
        child.expect_exact("small-coder")
        child.expect_exact(PROMPT)
        child.send("/model sm" + TAB)
        child.expect_exact("all-coder")
        child.send("\r")
        child.expect_exact("Now using small-coder, window 4096 tokens")
        child.expect_exact("processes the whole conversation again")
        child.expect_exact(PROMPT)
        ask(child, "/model small-coder")
        child.expect_exact("Still using small-coder, window 4096 tokens")
        child.expect_exact(PROMPT)
        ask(child, "and now?")
        child.expect(r"small-coder\S{0,40} · \S{0,40}window 4096")  # the status line follows
        child.expect_exact("On the small one.")
        child.expect_exact(PROMPT)
        leave(child)
        assert [r["model"] for r in srv.requests] == ["big-coder", "small-coder"]
        assert json.dumps(srv.requests[-1]).count("hello") >= 1  # the conversation went on


def test_plan_mode_offers_only_read_only_tools(server: object, project: Path) -> None:
    server.script(fakeserver.Reply(text="Here is a plan."),
                  fakeserver.Reply(text="Now I can edit."))
    child = spawn(server, project)
    ask(child, "/plan")
    child.expect_exact("Plan mode on")
    child.expect_exact(PROMPT)
    assert "processes the whole prompt again" not in child.before  # nothing cached yet
    ask(child, "plan the change")
    child.expect_exact("Here is a plan.")
    child.expect_exact(PROMPT)
    ask(child, "/plan")
    child.expect_exact("Plan mode off")
    child.expect_exact("processes the whole prompt again")
    child.expect_exact(PROMPT)
    ask(child, "do it")
    child.expect_exact("Now I can edit.")
    child.expect_exact(PROMPT)
    leave(child)
    planned, doing = ({t["function"]["name"] for t in r["tools"]} for r in server.requests)
    assert "write_file" not in planned and "run_command" not in planned
    assert "read_file" in planned and {"write_file", "run_command"} <= doing
    assert "[Plan mode: from now on" in server.requests[0]["messages"][-1]["content"]
    assert "[Plan mode is over" in server.requests[1]["messages"][-1]["content"]


def test_compact_with_a_focus_guides_the_recap(server: object, project: Path) -> None:
    for n in range(3):
        server.script(
            fakeserver.Reply(tool_calls=[("read_file", {"file_path": "src/parser.py"})]),
            fakeserver.Reply(text=f"Answer {n}."))
    server.script(fakeserver.Reply(text="## Task\nThe parser returns v1."))
    child = spawn(server, project)
    for n in range(3):
        ask(child, f"question {n}")
        child.expect_exact(f"Answer {n}.")
        child.expect_exact(PROMPT)
    ask(child, "/compact keep what we learned about the parser")
    child.expect_exact("Compacted. Level 2")
    child.expect_exact("The recap's focus: keep what we learned about the parser")
    child.expect_exact(PROMPT)
    leave(child)
    recap = server.requests[-1]
    assert not recap.get("tools")
    assert "a focus: keep what we learned about the parser" in recap["messages"][0]["content"]


BRACKETED = ("qwen2.5-coder:7b-instruct-q4_K_M", "lab[rc]/coder:[q4][bold]x", "a[red]b[/]:7b")


def test_ollama_names_with_brackets_are_listed_and_switched_to_as_written(
        project: Path) -> None:
    """Colours on: a name that looks like rich markup is shown, completed and sent as it
    is written, never eaten as a style."""
    with fakeserver.FakeServer(kind="ollama", model=BRACKETED[0], installed=BRACKETED) as srv:
        srv.script(fakeserver.Reply(text="Switched fine."))
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env.update(HOME=str(project), XDG_CONFIG_HOME=str(project / ".config"),
                   TERM="xterm-256color", COLUMNS="120", LINES="40")
        child = pexpect.spawn(SWIVAL, ["--provider", "ollama", "--base-url", srv.url],
                              cwd=str(project), env=env, encoding="utf-8",
                              dimensions=(40, 120), timeout=30)
        child.expect_exact("Ctrl-D to quit.")
        child.expect_exact(PROMPT)
        ask(child, "/model")
        child.expect_exact("switches for the rest of the session")
        table = re.sub("\x1b\\[[0-9;?]*[a-zA-Z]", "", child.before)
        assert f"{BRACKETED[0]} (current)" in table
        assert "\x1b[" in child.before  # colours were on
        for name in BRACKETED[1:]:
            assert name in table, table
        child.expect_exact(PROMPT)
        child.send("/model lab" + TAB)
        child.expect_exact("[q4][bold]x")
        child.send("\r")
        child.expect_exact("Now using ")
        child.expect_exact("lab[rc]/coder:[q4][bold]x")
        child.expect_exact(PROMPT)
        ask(child, "hello")
        child.expect_exact("Switched fine.")
        child.expect_exact(PROMPT)
        leave(child)
        assert srv.requests[-1]["model"] == BRACKETED[1]
