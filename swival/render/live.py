"""The REPL's live region: the lines at the bottom of the output that change while a turn
runs (the tail of the streaming text, a spinner with what is being waited for and for how
long, the status figures), redrawn eight times a second and gone when the turn ends.

Every line is kept within the terminal's width (cut with an ellipsis, never wrapped), so
the region's height is known. When the terminal gets narrower, terminals that re-wrap
their contents (tmux, VTE, kitty, iTerm2 ...) turn the region's lines into more rows;
the next redraw first climbs over all of those rows, so no stale copy stays behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

REFRESH_PER_SECOND = 8


def rewrapped_rows(lengths: Sequence[int], width: int) -> int:
    """Rows that lines of these cell lengths take once a terminal `width` cells wide has
    re-wrapped them (an empty line still takes one)."""
    return sum(max(1, -(-length // max(1, width))) for length in lengths)


@dataclass
class Wait:
    """What the person is waiting for, since when, with its own spinner (one per wait,
    so the glyph turns instead of starting over at every redraw)."""

    label: str
    since: float
    show_after: float = 0.0  # seconds of waiting before the spinner is shown at all
    spinner: Spinner = field(default_factory=lambda: Spinner("dots"))

    def due(self, now: float) -> bool:
        return now - self.since >= self.show_after

    def line(self, now: float, decimals: int = 1) -> Text:
        frame = self.spinner.render(now)
        text = frame if isinstance(frame, Text) else Text(str(frame))
        text.append(f" {self.label} · {now - self.since:.{decimals}f}s", style="dim")
        return text


class LiveRegion:
    """A transient rich `Live` whose body is a list of one-row lines from `body()`."""

    def __init__(self, console: Console, body: Callable[[int], list[Text]]) -> None:
        self.console = console
        self.body = body
        self._live: Live | None = None
        self._drawn: list[int] = []  # cell lengths of the lines last drawn
        self._drawn_width = 0

    @property
    def running(self) -> bool:
        return self._live is not None

    def start(self) -> None:
        if self._live is None:
            self._drawn, self._drawn_width = [], 0
            self._live = Live(console=self.console, transient=True,
                              refresh_per_second=REFRESH_PER_SECOND,
                              get_renderable=self.render, redirect_stderr=False)
            self._live.start()

    def stop(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def render(self) -> Group:
        """The body as the live display shows it now (called by its refresh thread)."""
        width = self.console.width
        self.follow_width()
        lines = self.body(width)
        for line in lines:
            line.no_wrap, line.overflow = True, "ellipsis"
        self._drawn = [min(width, line.cell_len) for line in lines]
        self._drawn_width = width
        return Group(*lines)

    def follow_width(self) -> None:
        """After the terminal got narrower, make the next redraw climb over every row the
        re-wrapped region now takes. Called before anything is drawn."""
        width = self.console.width
        if self._live is None or not self._drawn or width >= self._drawn_width:
            return
        rows = rewrapped_rows(self._drawn, width)
        # rich keeps the height of the last drawing privately; it climbs that many rows.
        self._live._live_render._shape = (width, rows)  # noqa: SLF001
        self._drawn_width = width
