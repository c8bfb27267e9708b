"""The approval question says the same thing in the REPL and in a one-shot run started
from a terminal: the question, the answers offered, what is said about a reply that is
not an answer, and the outcome lines (the installed `swival` in a real pseudo-terminal
against the loopback fake server)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from swival.render.asking import not_an_answer, options, read_answer

pexpect = pytest.importorskip("pexpect")
from tests.fakeserver import FakeServer, text, tool  # noqa: E402

SWIVAL = shutil.which("swival")
ESCAPES = re.compile("\x1b\\[[0-9;?]*[a-zA-Z]")
# What each question shows, what is answered, and the line that shows the outcome.
EXCHANGE = [
    ("Run `touch one`?", "[y]es once / [a]lways allow touch / [n]o: ", "n",
     "✗ run_command touch one — not run: you declined"),
    ("Run `touch two`?", "[y]es once / [a]lways allow touch / [n]o: ", "abort", None),
    (None, "`abort` is not one of the answers. Answer y (once), a (always), or n (no).", "y",
     "• run_command touch two — exit 0"),
    ("Change notes.txt?",
     "[y]es once / [a]lways allow notes.txt / [s] always allow every file / [n]o: ", "s",
     "• edit_file notes.txt — modified notes.txt"),
]


def script(server: FakeServer) -> None:
    server.script(tool("run_command", command="touch one"),
                  tool("run_command", command="touch two"),
                  tool("read_file", file_path="notes.txt"),
                  tool("edit_file", file_path="notes.txt", old_string="alpha",
                       new_string="omega"),
                  text("all done"))


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
@pytest.mark.timeout(120)
def test_the_repl_and_a_one_shot_run_ask_and_answer_in_the_same_words(
        tmp_path: Path) -> None:
    seen = {}
    for oneshot in (False, True):
        root = tmp_path / ("oneshot" if oneshot else "repl")
        root.mkdir()
        (root / ".git").mkdir()
        (root / "notes.txt").write_text("alpha\nbeta\n")
        with FakeServer(kind="llamacpp", window=16_384) as server:
            script(server)
            seen[oneshot] = _run(server, root, oneshot)
        assert not (root / "one").exists() and (root / "two").exists()
        assert (root / "notes.txt").read_text() == "omega\nbeta\n"
    for question, offered, _, outcome in EXCHANGE:
        for oneshot, shown in seen.items():
            for said in (question, offered.rstrip(), outcome):
                assert said is None or said in shown, (oneshot, said, shown)
    assert "wants to run" not in seen[True] and "Allow?" not in seen[True]


def _run(server: FakeServer, root: Path, oneshot: bool) -> str:
    env = {**os.environ, "HOME": str(root), "XDG_CONFIG_HOME": str(root / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "40"}
    args = ["--provider", "llamacpp", "--base-url", server.url, "--commands", "ask",
            "--edits", "ask", *(["-p", "go"] if oneshot else [])]
    child = pexpect.spawn(SWIVAL, args, cwd=str(root), env=env, encoding="utf-8",
                          dimensions=(40, 160), timeout=30)
    shown: list[str] = []

    def wait(said: str) -> None:
        child.expect_exact(said)
        shown.append(child.before + said)

    if not oneshot:
        wait("›")
        child.send("go\r")
    for question, offered, answer, _ in EXCHANGE:
        if question:
            wait(question)
        wait(offered.rstrip())
        child.send(answer + "\r")
    wait("all done")
    if not oneshot:
        wait("›")
        child.sendcontrol("d")
    child.expect(pexpect.EOF)
    shown.append(child.before)
    return ESCAPES.sub("", "".join(shown)).replace("\r", "")


def test_both_read_only_a_whole_answer() -> None:
    scopes = ("git", "every file")
    assert options(scopes) == ("[y]es once / [a]lways allow git / [s] always allow every "
                               "file / [n]o: ")
    assert options(()) == "[y]es once / [n]o: "
    assert [read_answer(r, scopes) for r in ("Y", "once", "", "deny", "always", "s", "A")] == [
        ("once", ""), ("once", ""), ("deny", ""), ("deny", ""), ("always", "git"),
        ("always", "every file"), ("always", "git")]
    assert read_answer("abort", scopes) is None and read_answer("a", ()) is None
    assert read_answer("always", ()) is None
    assert not_an_answer(" sure ", ()) == ("`sure` is not one of the answers. Answer y (once) "
                                           "or n (no).")


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
@pytest.mark.timeout(60)
@pytest.mark.parametrize("oneshot", [False, True])
def test_ctrl_c_at_the_question_gives_the_same_outcome_line(tmp_path: Path,
                                                            oneshot: bool) -> None:
    (tmp_path / ".git").mkdir()
    with FakeServer(kind="llamacpp", window=16_384) as server:
        server.script(tool("run_command", command="touch planted"), text("never"))
        env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".cfg"),
               "NO_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "40"}
        args = ["--provider", "llamacpp", "--base-url", server.url, "--commands", "ask",
                *(["-p", "go"] if oneshot else [])]
        child = pexpect.spawn(SWIVAL, args, cwd=str(tmp_path), env=env, encoding="utf-8",
                              dimensions=(40, 160), timeout=30)
        if not oneshot:
            child.expect_exact("›")
            child.send("go\r")
        child.expect_exact("[y]es once / [a]lways allow touch / [n]o:")
        child.sendintr()
        child.expect_exact("✗ run_command touch planted — cancelled at the approval question")
        if not oneshot:
            child.expect_exact("›")
            child.sendcontrol("d")
        child.expect(pexpect.EOF)
    assert not (tmp_path / "planted").exists()


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
@pytest.mark.timeout(60)
def test_a_one_shot_run_whose_stderr_is_a_file_refuses_instead_of_asking_unseen(
        tmp_path: Path) -> None:
    """stdin is a terminal but the question would go to a log file: nobody could see it,
    so the run must not wait for an answer; the command and the edit are refused."""
    (tmp_path / ".git").mkdir()
    with FakeServer(kind="llamacpp", window=16_384) as server:
        server.script(tool("run_command", command="touch planted"),
                      tool("write_file", file_path="new.txt", content="x\n"), text("done"))
        env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".cfg"),
               "NO_COLOR": "1"}
        line = (f"{SWIVAL} --provider llamacpp --base-url {server.url} --commands ask "
                f"--edits ask -p go 2>err.log")
        child = pexpect.spawn("/bin/sh", ["-c", line], cwd=str(tmp_path), env=env,
                              encoding="utf-8", timeout=30)
        child.expect(pexpect.EOF)
    log = (tmp_path / "err.log").read_text()
    assert "done" in child.before and "[y]es once" not in log
    assert "✗ run_command touch planted — not run" in log
    assert "✗ write_file new.txt — not written: edits need approval" in log
    assert not (tmp_path / "planted").exists() and not (tmp_path / "new.txt").exists()
