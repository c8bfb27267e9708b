"""The installed `swival` in a real pseudo-terminal (pexpect) against the loopback fake
server: a request and its answer, every slash command, Ctrl-C during a long-running
command (its process is gone afterwards, its line stays), /exit, resuming the session
(the last exchanges replayed), the toolbar at the idle prompt, the spinner turning while
a reply is awaited, keys typed during a turn kept out of the output, and live progress
while a slash command waits on the model."""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")
fakeserver = pytest.importorskip("tests.fakeserver")
from tests.e2e import gone, pids_of, unique_sleep  # noqa: E402

PROMPT = "›"  # the space after it is drawn as a cursor move
SPINNER = re.compile("([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏])(?:\x1b\\[[0-9;]*m)* thinking · ")
SWIVAL = shutil.which("swival")
pytestmark = [
    pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps"),
    pytest.mark.timeout(90),
]


@pytest.fixture
def server() -> Iterator[object]:
    with fakeserver.FakeServer(kind="llamacpp", window=16_384) as srv:
        yield srv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    return tmp_path


def spawn(server: object, project: Path, *extra: str, kind: str = "llamacpp") -> object:
    env = {**os.environ, "HOME": str(project), "XDG_CONFIG_HOME": str(project / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    child = pexpect.spawn(SWIVAL, ["--provider", kind, "--base-url", server.url,
                                   "--commands", "all", *extra],
                          cwd=str(project), env=env, encoding="utf-8", dimensions=(40, 120),
                          timeout=30)
    child.logfile_read = sys.stdout if os.environ.get("SWIVAL_PTY_LOG") else None
    child.expect_exact("Ctrl-D to quit.")  # the banner's last line (a replay holds "›" too)
    child.banner = child.before
    child.expect_exact(PROMPT)
    return child


def ask(child: object, text: str) -> None:
    child.send(text + "\r")


def test_request_commands_and_exit(server: object, project: Path) -> None:
    started = time.monotonic()
    child = spawn(server, project)
    assert time.monotonic() - started < 10  # the real target (0.5 s) is in the benchmark
    server.script(fakeserver.Reply(text="The answer is forty-two."))
    ask(child, "what is the answer?")
    child.expect_exact("The answer is forty-two.")
    child.expect_exact(PROMPT)

    checks = [
        ("/help", "Commands:"),
        ("/context", "tool schemas"),
        ("/todo", "The todo list is empty."),
        ("/save before-reading", "Checkpoint 'before-reading' saved. /restore collapses"),
        ("/unsave", "Checkpoint 'before-reading' cancelled"),
        ("/compact", "Nothing to compact at level 1"),
        ("/compact --drop", "Nothing to compact at levels 1 and 2"),
        ("/sessions", "(this one)"),
        ("/contxt", "Did you mean /context?"),
        # a stray argument: the command does nothing and says so (/exit does not leave)
        ("/exit now", "/exit takes no arguments, so it did nothing (given: now). Type /exit "
                      "alone."),
        ("/undo everything", "/undo does not take 'everything', so it did nothing. Usage: "
                             "/undo [--force]"),
    ]
    for command, expected in checks:
        ask(child, command)
        child.expect_exact(expected)
        child.expect_exact(PROMPT)

    ask(child, "/save probe")
    child.expect_exact("Checkpoint 'probe' saved")
    child.expect_exact(PROMPT)
    server.script(fakeserver.Reply(text="Paris is the capital."),
                  fakeserver.Reply(text="Summary: the user asked about Paris.", mode="hang",
                                   hang=1.0))
    ask(child, "and the capital of France?")
    child.expect_exact("Paris is the capital.")
    child.expect_exact(PROMPT)
    ask(child, "/restore")
    child.expect_exact("/restore · ")  # the recap takes a second: a spinner says so
    child.expect_exact("Collapsed 2 messages into a summary written by the model, "
                       "kept for the rest of the session: ")
    child.expect_exact(PROMPT)
    assert "Snapshot restore" not in child.before  # one line, not two
    assert not server.requests[-1].get("tools"), "the summary request offers no tools"

    ask(child, "/clear")
    child.expect_exact("Cleared")
    child.expect_exact(PROMPT)
    ask(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "what is the answer?" in (project / ".swival" / "history").read_text()


def test_ctrl_c_kills_a_long_command_and_keeps_the_session(server: object,
                                                           project: Path) -> None:
    sleeper = unique_sleep()
    command = f"{sleeper} & wait"
    server.script(fakeserver.Reply(tool_calls=[("run_command", {"command": command})]))
    child = spawn(server, project)
    ask(child, "run the long thing")
    deadline = time.monotonic() + 20
    while not pids_of(sleeper):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.1)
    time.sleep(0.3)
    child.sendcontrol("c")
    child.expect_exact(f"✗ run_command {command} — interrupted after ")  # the line stays
    child.expect_exact("Interrupted")
    child.expect_exact(PROMPT)
    assert gone(sleeper)

    server.script(fakeserver.Reply(text="Still here."))
    ask(child, "are you there?")
    child.expect_exact("Still here.")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0



def test_ctrl_c_at_an_approval_question_cancels_the_call(server: object,
                                                        project: Path) -> None:
    """Ctrl-C while a command waits for approval: its line says it was cancelled at the
    question (no run time: it never ran), and the command did not run."""
    server.script(fakeserver.Reply(tool_calls=[("run_command", {"command": "touch planted"})]))
    child = spawn(server, project, "--commands", "ask")
    ask(child, "make the file")
    child.expect_exact("[n]o:")
    child.sendcontrol("c")
    child.expect_exact("✗ run_command touch planted — cancelled at the approval question")
    child.expect_exact("Interrupted")
    child.expect_exact(PROMPT)
    assert "interrupted after" not in child.before
    assert not (project / "planted").exists()
    child.sendcontrol("d")
    child.expect(pexpect.EOF)


def test_ctrl_c_clears_a_typed_line_and_twice_on_an_empty_prompt_leaves(
        server: object, project: Path) -> None:
    child = spawn(server, project)
    child.send("half a request")
    child.expect_exact("half a request")  # on screen: the prompt has read it
    child.sendcontrol("c")  # clears the line: no hint, still running
    child.expect_exact(PROMPT)
    time.sleep(0.5)  # one key per read: two Ctrl-C in one read are one press for the prompt
    child.sendcontrol("c")  # the prompt is empty now: the hint
    child.expect_exact("Press Ctrl-C again to leave (or Ctrl-D).")
    child.expect_exact(PROMPT)
    child.sendcontrol("c")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert child.before.count("Press Ctrl-C again") == 0  # said once, not again on leaving


def test_continue_resumes_the_last_session(server: object, project: Path) -> None:
    server.script(fakeserver.Reply(text="First answer."))
    child = spawn(server, project)
    ask(child, "remember the word pineapple")
    child.expect_exact("First answer.")
    child.expect_exact(PROMPT)
    ask(child, "/exit")
    child.expect(pexpect.EOF)

    child = spawn(server, project, "--continue")
    banner = child.banner  # printed before the prompt: where the session left off
    assert "Resumed session" in banner
    assert banner.index("› remember the word pineapple") < banner.index("  First answer.")
    server.script(fakeserver.Reply(text="Second answer."))
    ask(child, "what was the word?")
    child.expect_exact("Second answer.")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    last = server.requests[-1]
    assert "pineapple" in str(last["messages"])


def test_secrets_never_reach_the_screen_or_the_history_file(
        server: object, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-or-v1-pty0123456789abcdef0123"
    marker = "[redacted:OPENROUTER_API_KEY]"
    (project / "deploy.env").write_text(f"OPENROUTER_API_KEY={key}\nregion=eu\n")
    server.script(
        fakeserver.Reply(tool_calls=[("read_file", {"file_path": "deploy.env"})]),
        fakeserver.Reply(tool_calls=[("edit_file", {"file_path": "deploy.env",
                                                    "old_string": "region=eu",
                                                    "new_string": "region=us"})]),
        fakeserver.Reply(tool_calls=[("run_command", {"command": "cat deploy.env"})]),
        fakeserver.Reply(text="Region changed."),
        fakeserver.error(400, f"unknown field near {key}"))
    monkeypatch.setenv("OPENROUTER_API_KEY", key)
    child = spawn(server, project)
    screen = io.StringIO()
    child.logfile_read = screen
    ask(child, f"move the region to us; the key is {key}")
    child.expect_exact("Region changed.")
    child.expect_exact(PROMPT)
    ask(child, "once more")
    child.expect_exact("rejected the request")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    # What Swival printed: everything after the prompt let go of the typed line (the
    # terminal echoes what the person typed, key included; that is theirs to see).
    everything = screen.getvalue()
    shown = everything[everything.index("\x1b[?2004l", everything.index(key)):]
    assert "+region=us" in shown and marker in shown and "rejected the request" in shown
    assert key not in shown and key[:12] not in shown
    assert (project / "deploy.env").read_text() == f"OPENROUTER_API_KEY={key}\nregion=us\n"
    history = (project / ".swival" / "history").read_text()
    assert "the key is [redacted:OPENROUTER_API_KEY]" in history and key not in history


def test_toolbar_spinner_and_type_ahead(project: Path) -> None:
    with fakeserver.FakeServer(kind="lmstudio", window=16_384,
                               others={"small-coder": 4096}) as server:
        child = spawn(server, project, kind="lmstudio")
        # The bottom toolbar, at the idle prompt: model, real window and source, context.
        child.expect_exact("test-model · window 16384 [LM Studio loaded context length "
                           "(/api/v1/models)] · ctx ")
        server.script(fakeserver.Reply(text="The slow answer.", mode="hang", hang=1.5))
        ask(child, "take your time")
        child.expect(SPINNER)
        glyphs = {child.match.group(1)}
        child.send("zzz")  # typed while the model works
        child.expect_exact("The slow answer.")
        glyphs.update(SPINNER.findall(child.before))
        assert len(glyphs) >= 3, glyphs  # the glyph turns
        assert "zzz" not in child.before  # not echoed into the output
        child.expect_exact(PROMPT)
        child.expect_exact("zzz")  # kept for the next prompt
        child.sendcontrol("u")
        ask(child, "/model small-coder")
        child.expect_exact("small-coder")
        child.expect_exact(PROMPT)
        child.expect_exact("small-coder · window 4096 [")  # the toolbar follows
        child.sendcontrol("d")
        child.expect(pexpect.EOF)


def test_a_resize_mid_turn_redraws_the_live_lines_at_the_new_width(server: object,
                                                                   project: Path) -> None:
    """spawn() exports COLUMNS=120, as some shells do; the terminal's own size must win
    once it changes, or the live lines are drawn wider than the screen and every redraw
    leaves a stale copy behind."""
    server.script(fakeserver.Reply(text="The late answer.", mode="hang", hang=3))
    child = spawn(server, project)
    ask(child, "take your time")
    child.expect(SPINNER)
    child.setwinsize(40, 60)
    time.sleep(0.6)  # the redraw in flight when the size changed
    child.expect(SPINNER)
    child.expect("The late answer.")
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)
    pieces = [piece for line in drawn.split("\n") for piece in line.split("\r")]
    assert "thinking" in drawn and max(len(piece) for piece in pieces) <= 60, pieces
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)


def test_keys_typed_before_an_approval_question_cannot_answer_it(server: object,
                                                                  project: Path) -> None:
    server.script(fakeserver.Reply(tool_calls=[("run_command", {"command": "touch made"})],
                                   mode="hang", hang=1.0),
                  fakeserver.Reply(text="Left it alone."))
    child = spawn(server, project, "--commands", "ask")
    ask(child, "make the file")
    child.expect(SPINNER)
    child.send("y\r")  # typed ahead while the model thinks: not an answer to what comes
    child.expect_exact("Run `touch made`?")
    child.expect_exact("[n]o:")
    child.send("n\r")
    child.expect_exact("✗ run_command touch made — not run: you declined")
    child.expect_exact("Left it alone.")
    child.expect_exact(PROMPT)
    assert not (project / "made").exists()
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
