"""The REPL's turn view: what a person sees while a request runs and after it.

While anything is awaited (the request being prepared, the model thinking, a tool
running, a recap written between two model calls, a slash command calling the model) a
spinner says what and for how long; streamed text is shown live (its tail) and printed
as markdown once the model call is over; each tool call leaves one line (plus a command's
last output lines, or an edit's diff). The live region is transient: only the permanent
lines stay in the scrollback.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import IO, Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from swival.events import (
    Checkpointed,
    Compacted,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    Notice,
    ReplyRestarted,
    SubagentStep,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from swival.messages import Message, ToolCall, ToolResult
from swival.render.console import SizedConsole
from swival.render.lines import (
    NOTICE_STYLES,
    checkpoint_line,
    command_tail,
    compaction_line,
    diff_text,
    key_argument,
    screen_text,
    subagent_lines,
    tool_line,
)
from swival.render.live import LiveRegion, Wait
from swival.render.replay import replay_lines
from swival.render.status import Status, tokens
from swival.words import plural

DIFF_LINES = 40  # longest diff shown inline; the rest is counted, not printed
DIFF_CAP_LINES = 400  # a diff shown for approval: all of it (the tools cap it at 4 KB)
COMMAND_SPINNER_AFTER = 0.3  # a slash command shows its spinner once it takes this long
NEXT_REQUEST = "preparing the next request"
STYLES = {"info": "", "warning": "yellow", "error": "red", "dim": "dim"}


def make_console(file: IO[str] | None = None, *, width: int | None = None,
                 color: bool | None = None) -> Console:
    """The REPL's console (stdout by default). `color=False` forces plain text; None lets
    rich decide from the terminal and `NO_COLOR`. On stdout the terminal's own size wins
    over `COLUMNS`/`LINES`: an exported figure would stay fixed while the terminal is
    resized, and the live lines, drawn wider than the screen, would leave stale copies."""
    options: dict[str, Any] = {"highlight": False, "file": file, "width": width}
    if file is None and width is None:
        options["_environ"] = {k: v for k, v in os.environ.items()
                               if k not in ("COLUMNS", "LINES")}
    if color is False:
        options["no_color"] = True
        options["color_system"] = None
    return SizedConsole(**options)


def _markdown(text: str) -> RenderableType:
    # Imported on first use: markdown-it costs ~50 ms, and start-up time is a feature.
    from rich.markdown import Markdown

    return Markdown(text)


def preload() -> None:
    """Import what the first answer will need, from a background thread at start-up."""
    _markdown("")


def _figure(cell: str) -> bool:
    return cell.replace(".", "", 1).rstrip("%").isdigit() or cell in ("-", "")


class TurnView:
    """Renders one REPL turn after another from agent events (see the module docstring).
    `clock` is injectable so tests can move time."""

    def __init__(self, console: Console, status: Status,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.status = status
        self.clock = clock
        self._region = LiveRegion(console, self._body)
        self._buffer: list[str] = []
        self._wait: Wait | None = None  # what the spinner says while no tool runs
        self._tool: tuple[ToolCall, Wait] | None = None
        self._paused = 0.0  # seconds the running tool spent waiting at an approval prompt
        self._restore: Compacted | None = None  # a snapshot restore, told with its tool line
        self._status_line = True
        self._turn_started = 0.0
        self._approved_diff: str | None = None  # shown with its question; not again
        self._task = 0  # the task whose subagent steps were shown last
        self._child_paused = 0.0  # approval time since the last subagent step
        self._cancelled_asking = False  # Ctrl-C came while an approval question waited
        self._child: Wait | None = None  # the tool call a subagent runs now
        self._asking = ""  # who asks for approval while a subagent runs ("subagent 1")

    # -- events -------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        if isinstance(event, ModelCallStarted):
            self._waiting("thinking")
        elif isinstance(event, TextDelta):
            self._wait = None
            self._buffer.append(screen_text(event.text))
        elif isinstance(event, ReplyRestarted):
            self._superseded(event)
        elif isinstance(event, ModelCallFinished):
            self._wait = None
        elif isinstance(event, ToolStarted):
            self._flush_text()
            label = f"{screen_text(event.call.name)} {key_argument(event.call, None)}".rstrip()
            self._tool, self._paused = (event.call, Wait(label, self.clock())), 0.0
            self._child_paused, self._child, self._asking = 0.0, None, ""
            self._region.start()
        elif isinstance(event, ToolFinished):
            self._child, self._asking = None, ""
            self._tool_finished(event)
            self._waiting(NEXT_REQUEST)  # a recap may be written before the next call
        elif isinstance(event, Compacted):
            self._compacted(event)
        elif isinstance(event, Checkpointed):
            self._print(Text(checkpoint_line(event), style="dim"))
        elif isinstance(event, Notice):
            self._print(Text(screen_text(event.text), style=NOTICE_STYLES[event.level]))
        elif isinstance(event, TurnFinished):
            self._turn_finished(event)
        elif isinstance(event, SubagentStep):
            self.subagent(event)

    def subagent(self, event: SubagentStep) -> None:
        """A subagent's step while the parent's task call runs, indented under it; a call
        the person approved leaves out the time the question waited. A call it starts is
        shown live under the task's spinner until it is over."""
        self._asking = f"subagent {event.task}"
        if event.call is not None and event.result is None:
            label = f"{screen_text(event.call.name)} {key_argument(event.call, None)}"
            self._child, self._child_paused = Wait(label, self.clock()), 0.0
            return
        self._child = None
        seconds = max(0.0, event.seconds - self._child_paused)
        self._child_paused = 0.0
        for line in subagent_lines(event, self._task, self.console.width, seconds):
            self._print(line)
        self._task = event.task

    @property
    def asking(self) -> str:
        """Who asks when an approval question comes now: "subagent N" while a subagent
        runs, else "" (the agent itself)."""
        return self._asking

    def start_turn(self) -> None:
        self._turn_started = self.clock()
        self._buffer.clear()
        self._status_line = True

    def preparing(self) -> None:
        """The request is being prepared (e.g. the model client still loads): a live
        spinner with the elapsed time until the model call starts."""
        self._waiting("preparing")

    def interrupted(self) -> None:
        """Ctrl-C: keep what streamed so far and the line of the call that was running
        (marked interrupted), then say what happened."""
        self._flush_text()
        if self._tool is not None:
            call, wait = self._tool
            took = ("cancelled at the approval question" if self._cancelled_asking
                    else f"interrupted after {self.clock() - wait.since:.1f}s")
            self._print(tool_line(call, ToolResult("", True, {"summary": took}), 0.0,
                                  self.console.width))
        self.close()
        self.console.print(Text("Interrupted. The conversation is kept; ask on or /exit.",
                                style="yellow"))

    def error(self, text: str) -> None:
        self._flush_text()
        self.close()
        self.console.print(Text(text, style="red"))

    def close(self) -> None:
        self._wait, self._tool, self._cancelled_asking = None, None, False
        self._child, self._asking = None, ""
        self._region.stop()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Take the live display down to ask for approval, then bring it back; the time
        spent here does not count as the running tool's time, and Ctrl-C here marks the
        call as cancelled at its question."""
        was_live = self._region.running
        self._flush_text()
        self._region.stop()
        started = self.clock()
        try:
            yield
        except KeyboardInterrupt:
            self._cancelled_asking = True  # the call was stopped at its question
            raise
        finally:
            waited = self.clock() - started
            self._paused += waited
            self._child_paused += waited
            for wait in (self._tool[1] if self._tool else None, self._child):
                if wait is not None:
                    wait.since += waited
            if was_live:
                self._region.start()

    @contextmanager
    def working(self, label: str) -> Iterator[None]:
        """A spinner naming `label` with the elapsed time, shown once the work inside
        takes longer than COMMAND_SPINNER_AFTER (slash commands, which may call the
        model)."""
        self._status_line = False
        self._wait = Wait(label, self.clock(), show_after=COMMAND_SPINNER_AFTER)
        self._region.start()
        try:
            yield
        finally:
            self.close()
            self._status_line = True

    # -- plain output used by the REPL for commands -------------------------------------

    def message(self, text: str, level: str = "info") -> None:
        self._print(Text(text, style=STYLES.get(level, "")))

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[str]],
              title: str | None = None) -> None:
        """A plain table; columns whose cells are all figures are right-aligned. Cells are
        text, never markup, so `[label]` shows as typed. A first column of short names (a
        session id, a model) is never wrapped, so a name can be copied whole."""
        rows = [list(row) for row in rows]
        table = Table(title=title, show_edge=False, header_style="bold", pad_edge=False)
        for i, header in enumerate(headers):
            cells = [row[i] for row in rows if i < len(row)]
            numeric = bool(cells) and all(_figure(cell) for cell in cells)
            short = i == 0 and max(map(len, cells), default=0) <= self.console.width // 3
            table.add_column(header, justify="right" if numeric else "left", overflow="fold",
                             no_wrap=short)
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        self._print(table)

    def markdown(self, text: str) -> None:
        self._print(_markdown(text))

    def approval_diff(self, diff: str) -> None:
        """An edit's whole diff, shown before the person is asked about it (the tool line
        that follows then leaves it out)."""
        self._print(diff_text(diff, limit=DIFF_CAP_LINES))
        self._approved_diff = diff

    def live_body(self) -> RenderableType:
        """What the live region shows now (its refresh thread draws this)."""
        return self._region.render()

    def replay(self, messages: Sequence[Message]) -> None:
        """The last exchanges of a resumed conversation, compactly."""
        for line in replay_lines(messages, width=self.console.width):
            self._print(line)

    # -- internals ----------------------------------------------------------------------

    def _print(self, renderable: RenderableType) -> None:
        self._region.follow_width()
        self.console.print(renderable)

    def _waiting(self, label: str) -> None:
        self._wait = Wait(label, self.clock())
        self._region.start()

    def _body(self, width: int) -> list[Text]:
        """The live region's lines: streamed tail, spinner with elapsed time, status."""
        lines: list[Text] = []
        text = "".join(self._buffer)
        if text:
            room = max(3, self.console.height - 4)
            lines += [Text(line.expandtabs(4), style="dim")
                      for line in text.splitlines()[-room:]]
        now = self.clock()
        if self._tool is not None:
            lines.append(self._tool[1].line(now, decimals=0))
            if self._child is not None:
                lines.append(Text("    ").append_text(self._child.line(now, decimals=0)))
        elif self._wait is not None and self._wait.due(now):
            lines.append(self._wait.line(now))
        if self._status_line:
            lines.append(self.status.text(width))
        return lines

    def _superseded(self, event: ReplyRestarted) -> None:
        """The streamed text so far will not be the reply: keep it on screen struck through,
        say why, and wait for the new reply."""
        partial = "".join(self._buffer).strip()
        self._buffer.clear()
        said = screen_text(event.reason)
        if partial:
            self._print(Text(partial, style="dim strike"))
            said += " The text above is superseded."
        self._print(Text(f"↻ {said}", style="yellow"))
        self._waiting("thinking")

    def _flush_text(self) -> None:
        """Print what streamed so far as markdown (narration before tool calls, or what
        arrived before an interruption)."""
        text = "".join(self._buffer).strip()
        self._buffer.clear()
        if text:
            self._print(_markdown(text))

    def _compacted(self, event: Compacted) -> None:
        if event.level == 0 and self._tool is not None and self._tool[0].name == "snapshot":
            self._restore = event  # said once, on the snapshot call's line
            return
        self._print(Text("⟳ " + compaction_line(event), style="yellow"))
        if event.note:
            self._print(Text(screen_text(event.note), style="yellow"))

    def _tool_finished(self, event: ToolFinished) -> None:
        result, restore = event.result, self._restore
        self._tool, self._restore = None, None
        if restore is not None:
            said = str(result.meta.get("summary") or "collapsed")
            result = replace(result, meta={**result.meta, "summary": (
                f"{said}: {restore.tokens_before} → {restore.tokens_after} tokens")})
        seconds = max(0.0, event.seconds - self._paused)
        self._print(tool_line(event.call, result, seconds, self.console.width))
        for line in command_tail(result):
            self._print(Text("    " + line, style="dim", no_wrap=True, overflow="ellipsis"))
        diff = result.meta.get("diff")
        shown, self._approved_diff = self._approved_diff, None
        if isinstance(diff, str) and diff.strip() and not result.is_error and diff != shown:
            self._print(diff_text(diff, limit=DIFF_LINES))

    def _turn_finished(self, event: TurnFinished) -> None:
        self.close()
        if event.reason == "done":
            self._buffer.clear()  # the answer below is the cleaned form of what streamed
            if event.answer.strip():
                self.console.print(_markdown(screen_text(event.answer)))
        else:
            self._flush_text()
            if event.answer:
                self.console.print(Text(screen_text(event.answer), style="red"))
        took = self.clock() - self._turn_started if self._turn_started else 0.0
        self.console.print(Text(
            f"{plural(event.turns, 'model call')} · {plural(event.tool_calls, 'tool call')} · "
            f"{tokens(event.usage.prompt_tokens)} in / {tokens(event.usage.completion_tokens)} "
            f"out · {took:.1f}s", style="dim"))
