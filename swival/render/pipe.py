"""One-shot progress on stderr: a line per tool call, compaction and notice.

When stderr is not a terminal (a pipe, a CI log, a file) nothing is wrapped or cut: a
diagnostic is one whole line however long, so it can be searched and read back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text

from swival.events import (
    Checkpointed,
    Compacted,
    Event,
    Notice,
    ReplyRestarted,
    SubagentStep,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from swival.messages import ToolCall
from swival.render.console import SizedConsole
from swival.render.lines import (
    FAIL_MARK,
    NOTICE_STYLES,
    checkpoint_line,
    compaction_line,
    key_argument,
    screen_text,
    subagent_lines,
    tool_words,
)


def stderr_console() -> Console:
    """Diagnostics go to stderr; rich honours NO_COLOR and the terminal width itself.
    Without a terminal, lines are never wrapped or cut."""
    console = SizedConsole(stderr=True, highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


def say(text: str, style: str = "", console: Console | None = None) -> None:
    """A line for the person on stderr (the text as it is, no markup): wrapped between
    words at a terminal's width, one whole line on a pipe."""
    (console or stderr_console()).print(Text(text, style=style))


class ProgressPrinter:
    """One-shot progress on stderr: one line per tool call (a cross marks failures),
    compactions and notices; `quiet` keeps only errors."""

    def __init__(self, console: Console, *, quiet: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.quiet = quiet
        self.clock = clock
        self._task = 0  # the task whose subagent steps were shown last
        self.asking = ""  # "subagent N" while a subagent runs: who an approval is for
        self._running: ToolStarted | None = None  # the call that has no result yet
        self._since = 0.0  # when the running call started, less the time asking the person
        self._cancelled_asking = False  # Ctrl-C came while an approval question waited

    def _say(self, text: str, style: str) -> None:
        self.console.print(Text(text, style=style))

    def _call_line(self, call: ToolCall, mark: str, name: str, said: str, style: str) -> None:
        key = key_argument(call, limit=None if self.console.soft_wrap else 60)
        self._say(" ".join(part for part in (mark, name, key) if part) + f" — {said}", style)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """An approval question is asked: its time is not the running call's time, and
        Ctrl-C here marks the call as cancelled at its question (as the REPL does)."""
        started = self.clock()
        try:
            yield
        except KeyboardInterrupt:
            self._cancelled_asking = True
            raise
        finally:
            self._since += self.clock() - started

    def interrupted(self) -> None:
        """Ctrl-C: the line of the call that was running stays, marked interrupted after
        its time, or cancelled at its approval question, in the REPL's words."""
        running, self._running = self._running, None
        if running is not None and not self.quiet:
            said = ("cancelled at the approval question" if self._cancelled_asking
                    else f"interrupted after {self.clock() - self._since:.1f}s")
            self._call_line(running.call, FAIL_MARK, screen_text(running.call.name), said,
                            "red")

    def handle(self, event: Event) -> None:
        if isinstance(event, SubagentStep):
            self.asking = f"subagent {event.task}"
        elif isinstance(event, ToolStarted | ToolFinished):
            self.asking = ""
            self._running = event if isinstance(event, ToolStarted) else None
            self._since, self._cancelled_asking = self.clock(), False
        if isinstance(event, Notice) and event.level == "error":
            self._say(screen_text(event.text), "red")
        if self.quiet:
            return
        if isinstance(event, ToolFinished):
            mark, name, said, _ = tool_words(event.call, event.result, 0.0)
            self._call_line(event.call, mark, name, said,
                            "red" if event.result.failed else "dim")
        elif isinstance(event, Compacted):
            self._say(compaction_line(event), "yellow")
            if event.note:
                self._say(screen_text(event.note), "yellow")
        elif isinstance(event, Checkpointed):
            self._say(checkpoint_line(event), "dim")
        elif isinstance(event, Notice) and event.level != "error":
            self._say(screen_text(event.text), NOTICE_STYLES[event.level])
        elif isinstance(event, ReplyRestarted):
            self._say(screen_text(event.reason), "yellow")
        elif isinstance(event, TurnFinished) and event.reason == "max_turns":
            self._say(screen_text(event.answer), "red")
        elif isinstance(event, SubagentStep):
            self.subagent(event)

    def subagent(self, event: SubagentStep) -> None:
        """A subagent's step, indented under the task it runs for."""
        width = None if self.console.soft_wrap else self.console.width
        for line in subagent_lines(event, self._task, width):
            line.no_wrap = False
            self.console.print(line)
        self._task = event.task
