"""The interactive session: a prompt_toolkit prompt in front of the agent.

Plain text is a request, `/name` a command (swival/commands.py). History is kept per
project in `<root>/.swival/history` (Up/Down, Ctrl-R). Enter sends; Esc then Enter (what
Alt-Enter sends) inserts a newline; pasted text stays one message (bracketed paste). Ctrl-C
during a turn cancels it and keeps the conversation; on the prompt it only clears the line.
Ctrl-D or /exit leaves with exit code 0.

What the first request needs (the tokenizer, the HTTP client, litellm for a hosted model)
loads in a background thread started once the prompt has been drawn, so it never delays the
prompt; a request sent before it is ready waits for it behind a live spinner.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style

from swival import __version__
from swival.commands import COMMANDS, CommandReply, dispatch, is_command
from swival.errors import SwivalError, Terminated
from swival.providers.factory import warm_up
from swival.redaction import Redactor
from swival.render import Status, TurnView, make_console, preload
from swival.state import HISTORY, STATE_DIR
from swival.tools.policy import Question

if TYPE_CHECKING:
    from swival.session import Session

PROMPT = "› "
STYLE = Style.from_dict({
    "bottom-toolbar": "noreverse bg:#303030 #c0c0c0",
    "bottom-toolbar.warn": "bg:#303030 fg:ansiyellow bold",
    "bottom-toolbar.crit": "bg:#303030 fg:ansired bold",
    "prompt": "bold",
})
TOOLBAR_STYLES = {"ok": "class:bottom-toolbar", "warn": "class:bottom-toolbar.warn",
                  "crit": "class:bottom-toolbar.crit"}
Answer = Literal["once", "always", "deny"]
ALWAYS_KEYS = "as"  # the keys that answer "always", one per scope offered


@dataclass
class ReplIO:
    """Where the REPL reads and writes. Defaults: the real terminal, and a warm-up that loads
    the session's model client. Tests pass a pipe input, a dummy output, a console file and a
    no-op warm-up."""

    input: Input | None = None
    output: Output | None = None
    console_file: IO[str] | None = None
    width: int | None = None
    color: bool | None = None
    warm_up: Callable[[], None] | None = None
    history: bool = True


class RedactingHistory(FileHistory):
    """The prompt history file, with the session's secrets put out of sight before a
    line is saved (the line stays whole in this session's memory)."""

    def __init__(self, filename: str, redactor: Redactor) -> None:
        super().__init__(filename)
        self.redactor = redactor

    def store_string(self, string: str) -> None:
        super().store_string(self.redactor.redact(string))


class SlashAndPathCompleter(Completer):
    """Tab completes command names after a leading '/', their flags (and /model's model
    names, from `models`) after the name, and otherwise the last word as a path relative
    to the project root, an `@mention` included."""

    def __init__(self, root: Path, models: Callable[[], list[str]] | None = None) -> None:
        self.paths = PathCompleter(get_paths=lambda: [str(root)], expanduser=True)
        self.models = models

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for command in COMMANDS:
                if command.name.startswith(text[1:]):
                    yield Completion("/" + command.name, start_position=-len(text),
                                     display_meta=command.help.split(".")[0])
            return
        if text.startswith("/"):
            name, _, rest = text[1:].partition(" ")
            word = rest.split(" ")[-1]
            names = self.models() if name == "model" and self.models is not None else []
            for command in COMMANDS:
                if command.name == name:
                    for choice in (*command.flags, *names):
                        if choice.startswith(word):
                            yield Completion(choice, start_position=-len(word))
            return
        word = document.get_word_before_cursor(WORD=True)
        mention = word.startswith("@")
        word = word[1:] if mention else word
        if word or mention:
            yield from self.paths.get_completions(Document(word, len(word)), complete_event)


def key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


class Repl:
    """One interactive session over `session.agent`. `run()` returns the exit code."""

    def __init__(self, session: Session, io: ReplIO | None = None) -> None:
        self.session = session
        self.io = io or ReplIO()
        info = session.provider.info
        self.status = Status(model=info.model, window=info.window.tokens,
                             window_source=info.window.source,
                             budget=info.window.budget_tokens)
        self.console = make_console(self.io.console_file, width=self.io.width,
                                    color=self.io.color)
        self.view = TurnView(self.console, self.status)
        root = session.settings.project_root
        self.prompt: PromptSession[str] = PromptSession(
            history=self._history(root), completer=SlashAndPathCompleter(root, self._model_names),
            complete_while_typing=False, key_bindings=key_bindings(),
            bottom_toolbar=self.toolbar, style=STYLE, input=self.io.input,
            output=self.io.output, prompt_continuation=lambda width, *_: "." * (width - 1) + " ",
        )
        self._warm = threading.Thread(target=self._warm_up, name="swival-warm-up", daemon=True)
        self._warm_error: BaseException | None = None
        self._ready = threading.Event()  # the first request may go; the engine is free
        self._late_notice: str | None = None
        self._names: list[str] | None = None  # the server's models, for Tab after /model
        session.policy.ask = self.ask
        session.approvals.confirm = self.confirm
        session.agent.tool_ctx.on_event = self.view.handle  # a subagent's steps

    def _history(self, root: Path) -> FileHistory | InMemoryHistory:
        if not self.io.history:
            return InMemoryHistory()
        path = root / STATE_DIR / HISTORY
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return RedactingHistory(str(path), self.session.redactor)
        except OSError:
            return InMemoryHistory()  # a read-only project still gets a working prompt

    def _warm_up(self) -> None:
        """Off the start-up path, in the order the first request needs them: the first
        context figure for the toolbar (it loads the tokenizer) and the overhead warning,
        then the model client; only then what the answer alone needs (markdown)."""
        try:
            try:
                self._refresh_context()
                self._late_notice = self.session.overhead_warning()
                self.prompt.app.invalidate()  # redraw the toolbar with the figure
                if self.io.warm_up is not None:
                    self.io.warm_up()
                else:
                    warm_up(self.session.provider)
            finally:
                self._ready.set()
            preload()
        except BaseException as error:  # reported when the first request needs it
            self._warm_error = error

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> int:
        self._banner()
        self.prompt.app.after_render += self._start_warm_up
        while True:
            try:
                line = self.prompt.prompt([("class:prompt", PROMPT)])
            except Terminated:
                raise
            except KeyboardInterrupt:
                continue  # Ctrl-C on the prompt clears the line, nothing else
            except EOFError:
                break
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
        """Run a slash command and render its reply."""
        self._start_warm_up()
        self._ready.wait()  # commands use the engine; the warm-up thread may too
        try:
            reply = dispatch(line, self.session.agent)
        except SwivalError as error:
            reply = CommandReply(self.session.redactor.redact(str(error)), level="error")
        except KeyboardInterrupt:
            reply = CommandReply("Interrupted.", level="warning")
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
        self._refresh_context()
        return reply

    def turn(self, text: str) -> None:
        """Run one request to its end, Ctrl-C or error; the session always survives."""
        agent = self.session.agent
        self.view.start_turn()
        self.view.preparing()  # until the model call starts: warm-up, compaction, counting
        try:
            self._wait_until_ready()
        except KeyboardInterrupt:
            self.view.close()
            self.view.message("Cancelled before it started.", "warning")
            return
        try:
            for event in agent.run_turn(text):
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
            agent.interrupted()  # answers any unanswered tool call so the history stays valid
        finally:
            self.view.close()

    def _show_late_notice(self) -> None:
        """The overhead warning, computed off the start-up path, shown once."""
        if self._ready.is_set() and self._late_notice:
            self.view.message(self._late_notice, "warning")
            self._late_notice = None

    def _start_warm_up(self, *_: object) -> None:
        """Start the warm-up and the MCP servers once: after the prompt's first render
        (an `after_render` handler), so that they do not slow the prompt down; or when a
        line comes first."""
        if self._warm.ident is None:
            self.session.start_servers()
            self._warm.start()

    def _wait_until_ready(self) -> None:
        """Wait for the part of the warm-up that the request needs."""
        self._start_warm_up()
        self._ready.wait()
        if self._warm_error is not None:
            error, self._warm_error = self._warm_error, None
            self.view.message("Loading the model client failed early: "
                              + self.session.redactor.redact(str(error)), "warning")

    # -- status and prompts ---------------------------------------------------------------

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
        """The toolbar follows a /model switch."""
        info = self.session.provider.info
        self.status.model, self.status.window = info.model, info.window.tokens
        self.status.window_source = info.window.source
        self.status.budget = info.window.budget_tokens

    def _refresh_context(self) -> None:
        try:
            used = self.session.agent.context.estimate()
        except SwivalError:
            return
        self.status.context_tokens = used

    def _banner(self) -> None:
        info = self.session.provider.info
        self.view.message(f"swival {__version__} · {info.provider} {info.base_url} · "
                          f"{info.model} · window {info.window.describe()} · "
                          f"{self.session.agent.tool_ctx.sandbox.describe()}", "dim")
        for note in self.session.notices:
            self.view.message(note, "warning")
        history = self.session.agent.context.history
        if history:
            self.view.message(f"Resumed session {self.session.agent.context.session_id} "
                              f"({len(history)} messages).", "dim")
        self.view.message("Type a request, /help for commands, Ctrl-D to quit.", "dim")

    def ask(self, question: Question) -> Answer:
        """Asked by the command policy before a command runs: once, always or deny."""
        with self.view.paused():
            self.view.message(f"Run `{question.shown}`?")
            if question.found:
                self.view.message("Needs approval every time: " + "; ".join(question.found)
                                  + ".", "warning")
            programs = ", ".join(question.programs)
            return self._choose((programs,) if programs else ())[0]

    def confirm(self, action: str, scopes: tuple[str, ...], detail: str) -> str:
        """Any other approval (a fetch, an MCP tool, an edit with its diff as `detail`;
        see swival/tools/approval.py): once, deny, or the scope to allow always."""
        with self.view.paused():
            if detail:
                self.view.approval_diff(detail)
            self.view.message(f"{action}?")
            answer, scope = self._choose(scopes)
            return scope if answer == "always" else answer

    def _choose(self, scopes: tuple[str, ...]) -> tuple[Answer, str]:
        """Read the answer, with the scope chosen for "always" (keys a and s, one per
        scope offered; none offered, no "always")."""
        once: tuple[Answer, str] = ("once", "")
        deny: tuple[Answer, str] = ("deny", "")
        answers = {"y": once, "o": once, "n": deny, "d": deny, "": deny}
        answers.update((key, ("always", scope))
                       for key, scope in zip(ALWAYS_KEYS, scopes, strict=False))
        offers = [f"[a]lways allow {scope}" if key == "a" else f"[{key}] always allow {scope}"
                  for key, scope in zip(ALWAYS_KEYS, scopes, strict=False)]
        options = " / ".join(["[y]es once", *offers, "[n]o"]) + ": "
        keys = ", ".join(f"{key} (always)" for key in ALWAYS_KEYS[:len(scopes)])
        while True:
            try:
                reply = PromptSession[str](input=self.io.input, output=self.io.output)\
                    .prompt(options).strip().lower()
            except EOFError:
                return "deny", ""
            # Ctrl-C here propagates: it cancels the whole turn, like anywhere else.
            choice = answers.get(reply[:1])
            if choice is not None:
                return choice
            self.view.message(f"Answer y (once), {keys + ', ' if keys else ''}or n (no).",
                              "warning")


def run_repl(session: Session, io: ReplIO | None = None) -> int:
    """Entry point used by cli.py when no task is given and stdin is a terminal."""
    # Cursor-position requests only refine where menus open; a terminal (or a test
    # harness) that never answers them gets a warning in the middle of the session.
    os.environ.setdefault("PROMPT_TOOLKIT_NO_CPR", "1")
    return Repl(session, io).run()
