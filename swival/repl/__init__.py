"""The interactive session: a prompt_toolkit prompt in front of the agent.

Plain text is a request, `/name` a command (swival/commands/). History is kept per
project in `<root>/.swival/history` (Up/Down, Ctrl-R). Enter sends; Esc then Enter (what
Alt-Enter sends) inserts a newline; pasted text stays one message (bracketed paste). Ctrl-C
during a turn cancels it and keeps the conversation; on the prompt it clears the line, and
on an empty prompt it says a second Ctrl-C leaves, which it then does (exit code 0, as
Ctrl-D and /exit). The bottom toolbar under the input line shows the
model, its window and where that figure came from, and the context's share (yellow from
70 %, red from 90 %).

What the first request needs loads in the background once the prompt has been drawn
(warm.py), so it never delays the prompt; a request sent before it is ready waits behind
a live spinner. Whatever a turn or a command waits on, a spinner says what and for how
long. input.py holds the prompt's parts, terminal.py its hold on the terminal,
approve.py the approval questions.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import IO, TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.utils import is_dumb_terminal

from swival import __version__
from swival.commands import CommandReply, dispatch, is_command
from swival.errors import SwivalError, Terminated
from swival.events import ModelCallStarted
from swival.providers.factory import warm_up
from swival.render import Status, TurnView, make_console
from swival.repl.approve import ApprovalPrompts
from swival.repl.input import (
    LEAVE_HINT,
    PROMPT,
    STYLE,
    TOOLBAR_STYLES,
    SlashAndPathCompleter,
    key_bindings,
    make_history,
)
from swival.repl.terminal import keys_unechoed, prompt_output
from swival.repl.warm import WarmUp
from swival.words import plural

if TYPE_CHECKING:
    from swival.session import Session

__all__ = ["Repl", "ReplIO", "SlashAndPathCompleter", "run_repl"]


@dataclass
class ReplIO:
    """Where the REPL reads and writes. Defaults: the real terminal, a warm-up that loads
    the session's model client, then what the answer's rendering needs (`later`). Tests
    pass a pipe input, a dummy output, a console file and a no-op warm-up."""

    input: Input | None = None
    output: Output | None = None
    console_file: IO[str] | None = None
    width: int | None = None
    color: bool | None = None
    warm_up: Callable[[], None] | None = None
    later: Callable[[], None] | None = None
    history: bool = True


class Repl:
    """One interactive session over `session.agent`. `run()` returns the exit code."""

    def __init__(self, session: Session, io: ReplIO | None = None) -> None:
        self.session = session
        self.io = io or ReplIO()
        self.status = Status(model="", window=None, window_source="", budget=0)
        self._sync_model()
        self.console = make_console(self.io.console_file, width=self.io.width,
                                    color=self.io.color)
        self.view = TurnView(self.console, self.status)
        root = session.settings.project_root
        terminal = self.io.input is None
        self.prompt: PromptSession[str] = PromptSession(
            history=make_history(root, session.redactor, self.io.history),
            completer=SlashAndPathCompleter(root, self._model_names),
            complete_while_typing=False, key_bindings=key_bindings(),
            bottom_toolbar=self.toolbar, style=STYLE, input=self.io.input,
            # TERM=dumb: no output of ours, so prompt_toolkit's plain dumb-terminal prompt
            # is used (no cursor moves, no toolbar) instead of escape sequences.
            output=self.io.output or (prompt_output() if terminal and not is_dumb_terminal()
                                      else None),
            prompt_continuation=lambda width, *_: "." * (width - 1) + " ",
        )
        self.warm = WarmUp(self._first_figure,
                           self.io.warm_up or partial(warm_up, session.provider), self.io.later)
        self._names: list[str] | None = None  # the server's models, for Tab after /model
        approvals = ApprovalPrompts(self.view, self.io.input, self.io.output)
        session.policy.ask = approvals.ask
        session.approvals.confirm = approvals.confirm
        session.agent.listen(self.view.handle)  # a subagent's steps

    def _first_figure(self) -> str | None:
        """In the warm-up: the first context figure for the toolbar (it loads the
        tokenizer), then the overhead warning."""
        self._refresh_context()
        self.prompt.app.invalidate()  # redraw the toolbar with the figure
        return self.session.overhead_warning()

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> int:
        self._banner()
        self.prompt.app.after_render += self._start_warm_up
        leaving = False  # Ctrl-C on an empty prompt: a second one leaves
        while True:
            try:
                with self._dumb_keys():
                    line = self.prompt.prompt([("class:prompt", PROMPT)])
            except Terminated:
                raise
            except KeyboardInterrupt:
                if self.prompt.default_buffer.text.strip():
                    leaving = False  # Ctrl-C on a typed line clears it, nothing else
                elif leaving:
                    break
                else:
                    leaving = True
                    self.view.message(LEAVE_HINT, "dim")
                continue
            except EOFError:
                break
            leaving = False
            if not line.strip():
                continue
            self._show_late_notice()
            if is_command(line):
                if self.command(line).exit:
                    break
            else:
                self.turn(line)
        return 0

    def command(self, line: str) -> CommandReply:
        """Run a slash command and render its reply; a spinner shows while it works (some
        call the model)."""
        self._start_warm_up()
        try:
            with self.view.working(line.split()[0]), self._keys():
                self.warm.wait()  # commands use the engine; the warm-up may too
                reply = dispatch(line, self.session.agent)
        except SwivalError as error:
            reply = CommandReply(self.session.redactor.redact(str(error)), level="error")
        except KeyboardInterrupt:
            reply = CommandReply("Interrupted.", level="warning")
        finally:
            self.warm.sent()
        for event in reply.events:
            self.status.update(event)
        self._sync_model()
        if line.strip().startswith("/model"):
            self._names = None
        if reply.text:
            self.view.message(reply.text, reply.level)
        if reply.rows:
            self.view.table(reply.headers, reply.rows)
        if reply.footer:
            self.view.message(reply.footer, "dim")
        self._refresh_context(compactions=True)
        return reply

    def turn(self, text: str) -> None:
        """Run one request to its end, Ctrl-C or error; the session always survives."""
        try:
            self._turn(text)
        finally:
            self.warm.sent()

    def _turn(self, text: str) -> None:
        agent = self.session.agent
        self.view.start_turn()
        self.view.preparing()  # until the model call starts: warm-up, compaction, counting
        called = False  # a model call started: the next event comes after the server has it
        with self._keys():
            try:
                self._wait_until_ready()
            except KeyboardInterrupt:
                self.view.close()
                self.view.message("Cancelled before it started.", "warning")
                return
            try:
                for event in agent.run_turn(text):
                    if called:
                        self.warm.sent()
                    called = called or isinstance(event, ModelCallStarted)
                    self.status.update(event)
                    self.view.handle(event)
            except KeyboardInterrupt as stop:
                self.view.interrupted()
                finished = agent.interrupted()
                self.status.update(finished)
                if isinstance(stop, Terminated):
                    raise
            except SwivalError as error:
                self.view.error(f"swival: {self.session.redactor.redact(str(error))}")
                agent.interrupted()  # answers any unanswered tool call: the history stays valid
            finally:
                self.view.close()

    def _dumb_keys(self) -> AbstractContextManager[None]:
        """On a dumb terminal prompt_toolkit writes the prompt before it reads keys raw: a
        Ctrl-D typed in between would be taken by the terminal's line editing and lost,
        so line editing is off from before the prompt is written."""
        dumb = self.io.input is None and is_dumb_terminal()
        return keys_unechoed() if dumb else nullcontext()

    def _keys(self) -> AbstractContextManager[None]:
        """Keys typed while Swival works are not echoed (real terminal only)."""
        return keys_unechoed() if self.io.input is None else nullcontext()

    def _show_late_notice(self) -> None:
        """The overhead warning, computed off the start-up path, shown once."""
        if self.warm.ready and self.warm.late_notice:
            self.view.message(self.warm.late_notice, "warning")
            self.warm.late_notice = None

    def _start_warm_up(self, *_: object) -> None:
        """Start the warm-up and the MCP servers once: after the prompt's first render
        (an `after_render` handler), so that they do not slow the prompt down; or when a
        line comes first."""
        if not self.warm.started:
            self.session.start_servers()
            self.warm.start()

    def _wait_until_ready(self) -> None:
        """Wait for the part of the warm-up that the request needs."""
        self._start_warm_up()
        error = self.warm.wait()
        if error is not None:
            self.view.message("Loading the model client failed early: "
                              + self.session.redactor.redact(str(error)), "warning")

    # -- status ---------------------------------------------------------------------------

    def toolbar(self) -> StyleAndTextTuples:
        width = self.prompt.app.output.get_size().columns
        out: StyleAndTextTuples = []
        for i, (level, text) in enumerate(self.status.parts(max(20, width - 2))):
            out.append(("class:bottom-toolbar", " · " if i else " "))
            out.append((TOOLBAR_STYLES[level], text))
        return out

    def _model_names(self) -> list[str]:
        """Model names for Tab after /model: asked from the server the first time (and
        again after a /model command), then kept."""
        connector = self.session.agent.config.connector
        if self._names is None and connector is not None:
            try:
                self._names = [choice.name for choice in connector.models() or ()]
            except SwivalError:
                return []
        return self._names or []

    def _sync_model(self) -> None:
        """The toolbar follows the model in use (it changes with /model)."""
        info = self.session.provider.info
        self.status.model, self.status.window = info.model, info.window.tokens
        self.status.window_source = info.window.source
        self.status.budget = info.window.budget_tokens

    def _refresh_context(self, compactions: bool = False) -> None:
        """The toolbar's context figure (and with `compactions`, after a command, the
        engine's count of them, which /clear resets) as the engine has them."""
        context = self.session.agent.context
        try:
            self.status.context_tokens = context.estimate()
            if compactions:
                self.status.compactions = context.usage().compactions
        except SwivalError:
            return

    def _banner(self) -> None:
        info = self.session.provider.info
        self.view.message(self.session.redactor.redact(  # a key can sit in the base URL
            f"swival {__version__} · {info.provider} {info.base_url} · "
            f"{info.model} · window {info.window.describe()} · "
            f"{self.session.agent.describe_sandbox()}"), "dim")
        for note in self.session.notices:
            self.view.message(note, "warning")
        history = self.session.agent.context.history
        if history:
            self.view.message(f"Resumed session {self.session.agent.context.session_id} "
                              f"({plural(len(history), 'message')}); where it left off:",
                              "dim")
            self.view.replay(history)
        self.view.message("Type a request, /help for commands, Ctrl-D to quit.", "dim")


def run_repl(session: Session, io: ReplIO | None = None) -> int:
    """Entry point used by cli.py when no task is given and stdin is a terminal."""
    # Cursor-position requests would only tell prompt_toolkit how many rows lie below
    # the prompt; a terminal (or a test harness) that never answers them gets a wait and
    # a warning in the middle of the session. terminal.KnownHeightOutput answers instead.
    os.environ.setdefault("PROMPT_TOOLKIT_NO_CPR", "1")
    return Repl(session, io).run()
