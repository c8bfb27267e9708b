"""The only code that formats output for people (rich). Fed by agent events.

Two consumers: one-shot mode uses `ProgressPrinter` (a line per tool call on stderr); the
REPL uses `TurnView` (spinner, streamed text, markdown answer, tool lines, diffs) and
`Status` (the figures the bottom toolbar and the live status line show). rich honours
`NO_COLOR` itself; widths are read from the console on every line so narrow terminals get
shorter lines rather than wrapped ones.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
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
from swival.messages import ToolCall, ToolResult, Usage, clean_text

KEY_ARGUMENTS = ("file_path", "path", "pattern", "command", "url", "action", "thought",
                 "description")
LINE_WIDTH = 100
WARN_SHARE = 0.70  # context use shown in yellow from here
CRIT_SHARE = 0.90  # and in red from here
DIFF_LINES = 40  # longest diff shown inline; the rest is counted, not printed
DIFF_CAP_LINES = 400  # a diff shown for approval: all of it (the tools cap it at 4 KB)

Level = Literal["ok", "warn", "crit"]
# Control characters other than tab and newline: in model or file text they could move the
# cursor, retitle the window or worse, so they are shown as escapes instead.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def screen_text(text: str) -> str:
    """Text from the model or from files made safe to print: control characters become
    visible escapes (`\\x1b`) and lone surrogates U+FFFD."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", clean_text(text))


def stderr_console() -> Console:
    """Diagnostics go to stderr; rich honours NO_COLOR and the terminal width itself."""
    return Console(stderr=True, highlight=False)


def make_console(file: IO[str] | None = None, *, width: int | None = None,
                 color: bool | None = None) -> Console:
    """The REPL's console (stdout by default). `color=False` forces plain text; None lets
    rich decide from the terminal and `NO_COLOR`."""
    options: dict[str, Any] = {"highlight": False, "file": file, "width": width}
    if color is False:
        options["no_color"] = True
        options["color_system"] = None
    return Console(**options)


def key_argument(call: ToolCall, limit: int = 60) -> str:
    """The one argument that best says what a call does, shortened to one line."""
    for name in KEY_ARGUMENTS:
        value = call.arguments.get(name)
        if isinstance(value, str) and value:
            text = screen_text(" ".join(value.split()))
            return text if len(text) <= limit else text[:max(1, limit - 3)] + "..."
    return ""


def outcome(result: ToolResult) -> str:
    """A few words on how a tool call went, from its metadata."""
    meta: dict[str, Any] = dict(result.meta)
    if result.is_error:
        first = result.content.strip().splitlines()[0] if result.content.strip() else "error"
        return screen_text(first[:LINE_WIDTH])
    if "summary" in meta:  # a tool's own few words (fetch_url: status and size)
        return str(meta["summary"])
    if "exit_code" in meta:
        return f"exit {meta['exit_code']}"
    if "matches" in meta:
        return f"{meta['matches']} matches"
    if meta.get("kind") == "file" and "shown" in meta:
        return f"{meta['shown']} of {meta.get('lines', '?')} lines"
    if "count" in meta:
        return f"{meta['count']} entries"
    if meta.get("changed"):
        return ", ".join(f"{kind} {path}" for path, kind in meta["changed"])
    return "ok"


def compaction_line(event: Compacted) -> str:
    what = {0: "snapshot restore", 4: "emergency compaction"}.get(
        event.level, f"compaction level {event.level}")
    again = f"; {event.reprocessed} cached tokens to recompute" if event.reprocessed else ""
    return (f"{what}: {event.tokens_before} → {event.tokens_after} tokens "
            f"({event.reason}{again})")


def checkpoint_line(event: Checkpointed) -> str:
    return (f"checkpoint summary of {event.messages} messages saved ({event.tokens} tokens, "
            "written in the background)")


def subagent_lines(event: SubagentStep, task: int, width: int) -> list[Text]:
    """A subagent's step, indented under the parent's task call; led by a line naming
    the task when it is that task's first step (`task`: the one shown last)."""
    lines = []
    if event.task != task:
        lines.append(Text(f"  ↳ subagent {event.task}: {screen_text(event.description)}",
                          style="dim"))
    if event.call is not None and event.result is not None:
        lines.append(Text("    ").append_text(
            tool_line(event.call, event.result, event.seconds, max(20, width - 4))))
    elif event.text:
        style = {"info": "dim", "warning": "yellow", "error": "red"}[event.level]
        lines.append(Text("    " + screen_text(event.text), style=style))
    return lines


def _markdown(text: str) -> RenderableType:
    # Imported on first use: markdown-it costs ~50 ms, and start-up time is a feature.
    from rich.markdown import Markdown

    return Markdown(text)


def preload() -> None:
    """Import what the first answer will need, from a background thread at start-up."""
    _markdown("")


def tokens(n: int) -> str:
    """12345 -> '12.3k': compact counts for narrow status lines."""
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)


def tool_line(call: ToolCall, result: ToolResult, seconds: float, width: int) -> Text:
    """One line for a finished tool call: name, key argument, outcome, time; red on error.
    The key argument gets most of a narrow line; the outcome is cut first."""
    mark, style = ("✗", "red") if result.is_error else ("•", "dim")
    took = f" · {seconds:.1f}s" if seconds >= 0.1 else ""
    name = screen_text(call.name)
    room = max(12, width - len(name) - len(took) - 3)
    said = outcome(result)
    key = key_argument(call, limit=max(8, room - min(len(said) + 3, room // 3)))
    text = Text(f"{mark} {name} ", style=style)
    text.append(key, style="red" if result.is_error else "bold")
    text.append(f" — {said}"[:max(0, room - len(key))], style=style)
    text.append(took, style="dim")
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def diff_text(diff: str, limit: int = DIFF_LINES) -> Text:
    """A unified diff coloured line by line (added green, removed red, hunks cyan)."""
    lines = screen_text(diff.rstrip("\n")).splitlines()
    out = Text()
    for line in lines[:limit]:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = "dim"
        out.append("    " + line + "\n", style=style)
    if len(lines) > limit:
        out.append(f"    … {len(lines) - limit} more diff lines\n", style="dim")
    out.no_wrap, out.overflow = True, "ellipsis"
    return out


def _figure(cell: str) -> bool:
    return cell.replace(".", "", 1).rstrip("%").isdigit() or cell in ("-", "")


@dataclass
class Status:
    """Figures for the status bar, updated from events as a turn runs.

    `budget` is the window to measure use against (the real one, or the 8192 assumed when
    the window is unknown; `window` is then None and shown as "unknown").
    """

    model: str
    window: int | None
    window_source: str
    budget: int
    context_tokens: int = 0
    last_turn: Usage | None = None
    compactions: int = 0

    @property
    def share(self) -> float:
        return self.context_tokens / self.budget if self.budget else 0.0

    @property
    def level(self) -> Level:
        share = self.share
        return "crit" if share >= CRIT_SHARE else "warn" if share >= WARN_SHARE else "ok"

    def update(self, event: Event) -> None:
        if isinstance(event, ModelCallStarted):
            self.context_tokens = event.prompt_tokens
        elif isinstance(event, ModelCallFinished) and event.usage is not None:
            # The reply is now part of the conversation, so it counts as context too.
            self.context_tokens = event.usage.prompt_tokens + event.usage.completion_tokens
        elif isinstance(event, Compacted):
            self.context_tokens = event.tokens_after
            self.compactions += 1
        elif isinstance(event, TurnFinished):
            self.last_turn = event.usage

    def parts(self, width: int = 200) -> list[tuple[Level, str]]:
        """Status pieces as (level, text); pieces are dropped, least useful first, until
        the line fits `width`. Only the context share carries a level other than ok."""
        window = f"window {self.window}" if self.window else f"window unknown (~{self.budget})"
        ctx = f"ctx {int(100 * self.share)}% ({tokens(self.context_tokens)}/{tokens(self.budget)})"
        last = "last turn —"
        if self.last_turn is not None:
            last = (f"last turn {tokens(self.last_turn.prompt_tokens)} in/"
                    f"{tokens(self.last_turn.completion_tokens)} out")
        pieces: list[tuple[Level, str]] = [
            ("ok", self.model), ("ok", f"{window} [{self.window_source}]"),
            (self.level, ctx), ("ok", last), ("ok", f"{self.compactions} compactions"),
        ]
        for drop in (1, 4, 3, 0):  # source, compactions, turn figures, then the model name
            if sum(len(t) + 3 for _, t in pieces) <= width:
                break
            level, text = pieces[drop]
            pieces[drop] = (level, window if drop == 1 else "")
        return [(lvl, text) for lvl, text in pieces if text]

    def text(self, width: int = 200) -> Text:
        styles = {"ok": "dim", "warn": "yellow", "crit": "bold red"}
        out = Text()
        for i, (level, piece) in enumerate(self.parts(width)):
            if i:
                out.append(" · ", style="dim")
            out.append(piece, style=styles[level])
        return out


class ProgressPrinter:
    """One-shot progress on stderr: one line per tool call, compactions and notices."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self._task = 0  # the task whose subagent steps were shown last

    def handle(self, event: Event) -> None:
        if isinstance(event, Notice) and event.level == "error":
            self.console.print(f"[red]{escape(screen_text(event.text))}[/red]")
        if self.quiet:
            return
        if isinstance(event, ToolFinished):
            style = "red" if event.result.is_error else "dim"
            name = escape(screen_text(event.call.name))
            self.console.print(
                f"[{style}]• {name} {escape(key_argument(event.call))} — "
                f"{escape(outcome(event.result))}[/{style}]",
                soft_wrap=True,
            )
        elif isinstance(event, Compacted):
            self.console.print(f"[yellow]{escape(compaction_line(event))}[/yellow]")
            if event.note:
                self.console.print(f"[yellow]{escape(event.note)}[/yellow]", soft_wrap=True)
        elif isinstance(event, Checkpointed):
            self.console.print(f"[dim]{escape(checkpoint_line(event))}[/dim]")
        elif isinstance(event, Notice) and event.level != "error":
            style = "dim" if event.level == "info" else "yellow"
            self.console.print(f"[{style}]{escape(screen_text(event.text))}[/{style}]",
                               soft_wrap=True)
        elif isinstance(event, ReplyRestarted):
            self.console.print(f"[yellow]{escape(event.reason)}[/yellow]", soft_wrap=True)
        elif isinstance(event, TurnFinished) and event.reason == "max_turns":
            self.console.print(f"[red]{escape(screen_text(event.answer))}[/red]")
        elif isinstance(event, SubagentStep):
            self.subagent(event)

    def subagent(self, event: SubagentStep) -> None:
        """A subagent's step, indented under the task it runs for."""
        for line in subagent_lines(event, self._task, self.console.width):
            line.no_wrap = False
            self.console.print(line, soft_wrap=True)
        self._task = event.task


class TurnView:
    """Renders one REPL turn after another from agent events.

    While the model is thinking a spinner shows the elapsed time; streamed text is shown
    live (its tail, so it never scrolls off) and printed as markdown once the model call
    is over; each tool call leaves one line (plus a coloured diff for edits). The live
    region is transient: only the permanent lines stay in the scrollback.
    """

    def __init__(self, console: Console, status: Status,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.status = status
        self.clock = clock
        self._live: Live | None = None
        self._buffer: list[str] = []
        self._waiting_since: float | None = None
        self._waiting_for = "thinking"  # what the spinner says while nothing streams
        self._tool: tuple[ToolCall, float] | None = None
        self._turn_started = 0.0
        self._approved_diff: str | None = None  # shown with its question; not again
        self._task = 0  # the task whose subagent steps were shown last

    # -- public -------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        if isinstance(event, ModelCallStarted):
            self._ensure_live()
            self._waiting_since, self._waiting_for = self.clock(), "thinking"
        elif isinstance(event, TextDelta):
            self._waiting_since = None
            self._buffer.append(screen_text(event.text))
        elif isinstance(event, ReplyRestarted):
            self._superseded(event)
        elif isinstance(event, ModelCallFinished):
            self._waiting_since = None
        elif isinstance(event, ToolStarted):
            self._flush_text()
            self._tool = (event.call, self.clock())
            self._ensure_live()
        elif isinstance(event, ToolFinished):
            self._tool = None
            self._tool_finished(event)
        elif isinstance(event, Compacted):
            self.console.print(Text("⟳ " + compaction_line(event), style="yellow"))
            if event.note:
                self.console.print(Text(event.note, style="yellow"))
        elif isinstance(event, Checkpointed):
            self.console.print(Text(checkpoint_line(event), style="dim"))
        elif isinstance(event, Notice):
            style = {"info": "dim", "warning": "yellow", "error": "red"}[event.level]
            self.console.print(Text(screen_text(event.text), style=style))
        elif isinstance(event, TurnFinished):
            self._turn_finished(event)
        elif isinstance(event, SubagentStep):
            self.subagent(event)

    def subagent(self, event: SubagentStep) -> None:
        """A subagent's step while the parent's task call runs, indented under it."""
        for line in subagent_lines(event, self._task, self.console.width):
            self.console.print(line)
        self._task = event.task

    def start_turn(self) -> None:
        self._turn_started = self.clock()
        self._buffer.clear()

    def preparing(self) -> None:
        """The request is being prepared (e.g. the model client still loads): a live
        spinner with the elapsed time until the model call starts."""
        self._ensure_live()
        self._waiting_since, self._waiting_for = self.clock(), "preparing"

    def interrupted(self) -> None:
        """Ctrl-C: stop the live display, keep what streamed so far, say what happened."""
        self._flush_text()
        self.close()
        self.console.print(Text("Interrupted. The conversation is kept; ask on or /exit.",
                                style="yellow"))

    def error(self, text: str) -> None:
        self._flush_text()
        self.close()
        self.console.print(Text(text, style="red"))

    def close(self) -> None:
        self._waiting_since, self._tool = None, None
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Take the live display down (e.g. to ask for approval), then bring it back."""
        was_live = self._live is not None
        self._flush_text()
        if self._live is not None:
            self._live.stop()
            self._live = None
        try:
            yield
        finally:
            if was_live:
                self._ensure_live()

    # -- plain output used by the REPL for commands -------------------------------------------

    def message(self, text: str, level: str = "info") -> None:
        style = {"info": "", "warning": "yellow", "error": "red", "dim": "dim"}.get(level, "")
        self.console.print(Text(text, style=style))

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[str]],
              title: str | None = None) -> None:
        """A plain table; columns whose cells are all figures are right-aligned. Cells are
        text, never markup, so `[label]` shows as typed."""
        rows = [list(row) for row in rows]
        table = Table(title=title, show_edge=False, header_style="bold", pad_edge=False)
        for i, header in enumerate(headers):
            cells = [row[i] for row in rows if i < len(row)]
            numeric = bool(cells) and all(_figure(cell) for cell in cells)
            table.add_column(header, justify="right" if numeric else "left", overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        self.console.print(table)

    def markdown(self, text: str) -> None:
        self.console.print(_markdown(text))

    def approval_diff(self, diff: str) -> None:
        """An edit's whole diff, shown before the person is asked about it (the tool line
        that follows then leaves it out)."""
        self.console.print(diff_text(diff, limit=DIFF_CAP_LINES))
        self._approved_diff = diff

    # -- internals ----------------------------------------------------------------------

    def _ensure_live(self) -> None:
        if self._live is None:
            self._live = Live(console=self.console, transient=True, refresh_per_second=8,
                              get_renderable=self.live_body, redirect_stderr=False)
            self._live.start()

    def live_body(self) -> RenderableType:
        """What the live region shows now: streamed tail, spinner with elapsed time, status."""
        width = self.console.width
        parts: list[RenderableType] = []
        text = "".join(self._buffer)
        if text:
            room = max(3, self.console.height - 4)
            tail = text.splitlines()[-room:]
            parts.append(Text("\n".join(tail), style="dim"))
        if self._tool is not None:
            call, since = self._tool
            label = f"{screen_text(call.name)} {key_argument(call, max(10, width - 30))}"
            parts.append(Spinner("dots", Text(f"{label} · {self.clock() - since:.0f}s",
                                              style="dim")))
        elif self._waiting_since is not None:
            elapsed = self.clock() - self._waiting_since
            parts.append(Spinner("dots", Text(f"{self._waiting_for} · {elapsed:.1f}s",
                                              style="dim")))
        parts.append(self.status.text(width))
        return Group(*parts)

    def _superseded(self, event: ReplyRestarted) -> None:
        """The streamed text so far will not be the reply: keep it on screen struck through,
        say why, and wait for the new reply."""
        partial = "".join(self._buffer).strip()
        self._buffer.clear()
        if partial:
            self.console.print(Text(partial, style="dim strike"))
        self.console.print(Text(f"↻ {event.reason} The text above is superseded.",
                                style="yellow"))
        self._waiting_since = self.clock()

    def _flush_text(self) -> None:
        """Print what streamed so far as markdown (narration before tool calls, or what
        arrived before an interruption)."""
        text = "".join(self._buffer).strip()
        self._buffer.clear()
        if text:
            self.console.print(_markdown(text))

    def _tool_finished(self, event: ToolFinished) -> None:
        width = self.console.width
        self.console.print(tool_line(event.call, event.result, event.seconds, width))
        diff = event.result.meta.get("diff")
        shown, self._approved_diff = self._approved_diff, None
        if isinstance(diff, str) and diff.strip() and not event.result.is_error \
                and diff != shown:
            self.console.print(diff_text(diff))

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
            f"{event.turns} model calls · {event.tool_calls} tool calls · "
            f"{tokens(event.usage.prompt_tokens)} in / {tokens(event.usage.completion_tokens)} "
            f"out · {took:.1f}s", style="dim"))
