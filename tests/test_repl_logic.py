"""The REPL driven through prompt_toolkit's pipe input, against the real agent, context
engine and tools, with the scripted in-process provider standing in for the model."""

from __future__ import annotations

import io
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.data_structures import Size
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.output.vt100 import Vt100_Output

from swival.config import Settings
from swival.errors import TransientProviderError
from swival.providers.base import ChatRequest
from swival.repl import Repl, ReplIO, SlashAndPathCompleter
from swival.repl.approve import wrap_words
from swival.session import Session, build_session
from tests.e2e import gone, pids_of, unique_sleep
from tests.scripted import ScriptedProvider, call, reply

ESC_ENTER = "\x1b\r"
CTRL_C, CTRL_D = "\x03", "\x04"


def make_session(root: Path, provider: ScriptedProvider, commands: str = "all") -> Session:
    """The real composition (swival.session.build_session) around the scripted provider."""
    settings = Settings(project_root=root, commands=commands, max_output_tokens=1024,
                        max_turns=8, command_timeout=30)
    return build_session(settings, provider, interactive=True)


class Run:
    """A REPL over a pipe: keys go in with `send`, rendered output is in `out`."""

    def __init__(self, session: Session, warm_up: object = None) -> None:
        self.session = session
        self.buf = io.StringIO()
        self.code: int | None = None
        self._warm = warm_up or (lambda: None)

    def __call__(self, keys: str) -> str:
        with create_pipe_input() as pipe:
            pipe.send_text(keys)
            io_ = ReplIO(input=pipe, output=DummyOutput(), console_file=self.buf, width=100,
                         color=False, warm_up=self._warm)  # type: ignore[arg-type]
            self.repl = Repl(self.session, io_)
            self.code = self.repl.run()
        return self.buf.getvalue()


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "main.py").write_text("print('hi')\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "module.py").write_text("x = 1\n")
    yield tmp_path


def user_texts(request: ChatRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


def test_a_request_gets_its_answer_and_ctrl_d_leaves_with_0(root: Path) -> None:
    provider = ScriptedProvider([reply("The answer is **42**.", usage=(120, 9))])
    run = Run(make_session(root, provider))
    out = run("what is it?\r" + CTRL_D)
    assert run.code == 0
    assert "The answer is 42." in out
    assert user_texts(provider.requests[0])[-1] == "what is it?"
    assert "what is it?" in (root / ".swival" / "history").read_text()


def test_exit_command_leaves_with_0_and_sends_nothing(root: Path) -> None:
    provider = ScriptedProvider([])
    run = Run(make_session(root, provider))
    out = run("/exit\r")
    assert run.code == 0 and provider.requests == [] and "Bye." in out


def test_escape_enter_inserts_a_newline_and_paste_stays_one_message(root: Path) -> None:
    provider = ScriptedProvider([reply("one"), reply("two")])
    run = Run(make_session(root, provider))
    paste = "\x1b[200~first pasted line\nsecond pasted line\x1b[201~"
    run(f"line one{ESC_ENTER}line two\r{paste}\r{CTRL_D}")
    assert user_texts(provider.requests[0])[-1] == "line one\nline two"
    assert user_texts(provider.requests[1])[-1] == "first pasted line\nsecond pasted line"


def test_ctrl_c_on_the_prompt_does_nothing_harmful(root: Path) -> None:
    provider = ScriptedProvider([reply("still here")])
    run = Run(make_session(root, provider))
    out = run(f"half typed{CTRL_C}{CTRL_C}hello\r{CTRL_D}")
    assert run.code == 0
    assert len(provider.requests) == 1
    assert user_texts(provider.requests[0])[-1] == "hello"
    assert "still here" in out


def interrupt(_request: ChatRequest) -> object:
    raise KeyboardInterrupt  # what a real provider lets through when the user hits Ctrl-C


def test_ctrl_c_during_a_model_call_cancels_the_turn_and_keeps_the_session(root: Path) -> None:
    provider = ScriptedProvider([interrupt, reply("second answer")])
    run = Run(make_session(root, provider))
    out = run(f"first\rsecond\r{CTRL_D}")
    assert "Interrupted" in out and "second answer" in out
    assert user_texts(provider.requests[1])[-2:] == ["first", "second"]


@pytest.mark.timeout(30)
def test_ctrl_c_during_a_long_command_kills_it_and_answers_the_call(root: Path) -> None:
    sleeper = unique_sleep()
    command = f"{sleeper} & wait"
    provider = ScriptedProvider([call("run_command", command=command), reply("after")])
    run = Run(make_session(root, provider))

    def press_ctrl_c() -> None:  # SIGINT to ourselves, as the terminal sends it on Ctrl-C
        deadline = time.monotonic() + 10
        while not pids_of(sleeper):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    started = time.monotonic()
    out = run(f"run it\rnext\r{CTRL_D}")
    assert time.monotonic() - started < 20
    assert "Interrupted" in out and "after" in out
    assert gone(sleeper)
    # the unanswered call got a synthetic result, so the next request is valid chat
    last = provider.requests[-1].messages
    tool_msgs = [m for m in last if m.role == "tool"]
    assert tool_msgs and "interrupted" in tool_msgs[-1].content


def test_provider_errors_are_shown_and_the_session_goes_on(root: Path) -> None:
    provider = ScriptedProvider([TransientProviderError("server returned 500 three times"),
                                 reply("recovered")])
    run = Run(make_session(root, provider))
    out = run(f"one\rtwo\r{CTRL_D}")
    assert "swival: server returned 500 three times" in out
    assert "recovered" in out and run.code == 0


def test_tool_calls_render_one_line_each_and_edits_show_a_diff(root: Path) -> None:
    provider = ScriptedProvider([
        call("read_file", file_path="main.py"),
        call("edit_file", file_path="main.py", old_string="hi", new_string="hello"),
        reply("Changed the greeting."),
    ])
    run = Run(make_session(root, provider))
    out = run(f"change the greeting\r{CTRL_D}")
    assert "• read_file main.py — 1 line" in out
    assert "• edit_file main.py" in out
    assert "-print('hi')" in out and "+print('hello')" in out
    assert (root / "main.py").read_text() == "print('hello')\n"


def test_commands_are_asked_for_approval_in_ask_mode(root: Path) -> None:
    provider = ScriptedProvider([
        call("run_command", command="echo approved-once"),
        call("run_command", command="echo refused"),
        reply("done"),
    ])
    run = Run(make_session(root, provider, commands="ask"))
    out = run(f"go\ry\rn\r{CTRL_D}")
    results = [m.content for m in provider.requests[-1].messages if m.role == "tool"]
    assert "approved-once" in results[0]
    assert "refused" in results[1] and "declined" in results[1]
    # The person reads what happened in their words; the model's instructions stay its own.
    assert "✗ run_command echo refused — not run: you declined" in out
    assert "Ask them" not in out


def test_only_a_whole_answer_counts(root: Path) -> None:
    """"abort" starts with a but is not "always": it is asked again; whole words count
    in any case."""
    provider = ScriptedProvider([
        call("run_command", command="echo first"),
        call("run_command", command="echo second"),
        call("run_command", command="echo third"),
        call("run_command", command="ls"),
        reply("done"),
    ])
    session = make_session(root, provider, commands="ask")
    out = Run(session)(f"go\rabort\r YES \rAlways\rnope\rno\r{CTRL_D}")
    results = [m.content for m in provider.requests[-1].messages if m.role == "tool"]
    assert "`abort` is not one of the answers. Answer y (once), a (always), or n (no)." in out
    assert "`nope` is not one of the answers." in out
    assert "first" in results[0] and "second" in results[1] and "third" in results[2]
    assert "declined" in results[3]
    assert out.count("Run `echo") == 2  # after "always", echo third ran unasked
    assert session.policy.approved == {"echo"}


@pytest.mark.parametrize(("share", "style"), [(0.5, "class:bottom-toolbar"),
                                              (0.75, "class:bottom-toolbar.warn"),
                                              (0.95, "class:bottom-toolbar.crit")])
def test_the_toolbar_colours_the_context_share(root: Path, share: float, style: str) -> None:
    with create_pipe_input() as pipe:
        repl = Repl(make_session(root, ScriptedProvider()),
                    ReplIO(input=pipe, output=DummyOutput(), console_file=io.StringIO(),
                           warm_up=lambda: None))
        repl.status.context_tokens = int(share * repl.status.budget)
        pieces = dict((text, cls) for cls, text in repl.toolbar())
    ctx = next(text for text in pieces if text.startswith("ctx "))
    assert pieces[ctx] == style
    assert "scripted-model" in pieces and "window 8192 [scripted]" in pieces


def test_the_approval_prompt_wraps_between_words_at_a_narrow_width(root: Path) -> None:
    provider = ScriptedProvider([call("run_command", command="pytest -q && git status"),
                                 reply("done")])
    screen, console = io.StringIO(), io.StringIO()
    output = Vt100_Output(screen, lambda: Size(rows=24, columns=30), term="xterm")
    session = make_session(root, provider, commands="ask")
    with create_pipe_input() as pipe:
        pipe.send_text(f"go\rn\r{CTRL_D}")
        Repl(session, ReplIO(input=pipe, output=output, console_file=console, width=30,
                             color=False, warm_up=lambda: None)).run()
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    assert "[y]es once / [a]lways allow\r\npytest, git / [n]o:" in drawn
    assert wrap_words("[y]es once / [a]lways allow pytest, git / [n]o: ", 30) == (
        "[y]es once / [a]lways allow\npytest, git / [n]o: ")


def test_a_request_typed_before_warm_up_finishes_waits_for_it(root: Path) -> None:
    finished: list[float] = []

    def slow_warm_up() -> None:
        time.sleep(0.5)
        finished.append(time.monotonic())

    seen: list[float] = []

    def model(_request: ChatRequest) -> object:
        seen.append(time.monotonic())
        return reply("ok")

    run = Run(make_session(root, ScriptedProvider([model])), warm_up=slow_warm_up)
    out = run(f"early\r{CTRL_D}")
    assert finished and seen and seen[0] >= finished[0]
    assert "ok" in out  # the spinner it waited behind: test_render_view


def test_toolbar_shows_model_window_share_and_turn_tokens(root: Path) -> None:
    provider = ScriptedProvider([reply("ok", usage=(7500, 40))], window=10_000)
    run = Run(make_session(root, provider))
    run(f"hi\r{CTRL_D}")
    fragments = run.repl.toolbar()
    text = "".join(t for _, t in fragments)
    assert "scripted-model" in text and "window 10000" in text
    assert len(text) <= 80  # the dummy output is 80 columns wide: details made way
    wide = " · ".join(t for _, t in run.repl.status.parts(200))
    assert "last turn 7500 in/40 out" in wide and "window 10000 [scripted]" in wide
    styles = [s for s, t in fragments if t.startswith("ctx ")]
    assert styles == ["class:bottom-toolbar.warn"]  # 7540 of 10000 is over 70 %


def test_slash_commands_render_their_replies(root: Path) -> None:
    provider = ScriptedProvider([reply("first answer")])
    run = Run(make_session(root, provider))
    out = run("hello\r/help\r/context\r/todo\r/sessions\r/compac\r/frobnicate\r/exit\r")
    assert "/compact [--drop]" in out and "or Esc then Enter" in out  # /help
    assert "system prompt" in out and "tool schemas" in out and "level 2" in out  # /context
    assert "The todo list is empty." in out
    assert run.session.agent.context.session_id in out  # /sessions lists this session
    assert "Unknown command /compac. Did you mean /compact?" in out
    assert "Unknown command /frobnicate." in out


def test_clear_forgets_the_conversation(root: Path) -> None:
    provider = ScriptedProvider([reply("one"), reply("two")])
    run = Run(make_session(root, provider))
    out = run(f"remember me\r/clear\rfresh start\r{CTRL_D}")
    assert "Cleared" in out
    assert user_texts(provider.requests[1]) == ["fresh start"]


def test_the_toolbar_counts_compactions_as_context_does_after_a_clear(root: Path) -> None:
    provider = ScriptedProvider([reply("one"), reply("The summary."), reply("two"),
                                 reply("three")])
    run = Run(make_session(root, provider))
    out = run(f"/save\rremember me\r/restore\r/clear\r{CTRL_D}")
    assert "Collapsed" in out and "Cleared" in out  # the collapse was a compaction
    assert run.session.agent.context.usage().compactions == 0
    assert "0 compactions" in run.repl.status.parts(200)[-1]


def test_an_interrupted_turn_with_no_figures_shows_none(root: Path) -> None:
    provider = ScriptedProvider([reply("one", usage=(900, 5)), interrupt])
    run = Run(make_session(root, provider))
    run(f"first\r{CTRL_D}")
    assert "last turn 900 in/5 out" in " · ".join(t for _, t in run.repl.status.parts(200))
    run(f"second\r{CTRL_D}")
    assert "last turn —" in " · ".join(t for _, t in run.repl.status.parts(200))


def test_completer_completes_commands_flags_and_paths(root: Path) -> None:
    completer = SlashAndPathCompleter(root)

    def complete(text: str) -> list[str]:
        doc = Document(text, len(text))
        return [c.text for c in completer.get_completions(doc, CompleteEvent())]

    assert complete("/co") == ["/compact", "/context"]
    assert complete("/compact --d") == ["--drop"]
    assert complete("/help un") == ["unsave", "undo"]  # in /help's order
    assert complete("please read ma") == ["in.py"]
    assert complete("look at src/mo") == ["dule.py"]
    (root / "my notes").mkdir()
    (root / "my notes" / "to do.txt").write_text("x\n")
    assert complete("read @my") == ["\\ notes"]  # the space escaped: one word
    assert complete("read @my\\ notes/to") == ["\\ do.txt"]
