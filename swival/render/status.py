"""The figures the REPL's bottom toolbar and its live status line show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich.text import Text

from swival.events import Compacted, Event, ModelCallFinished, ModelCallStarted, TurnFinished
from swival.messages import Usage
from swival.words import percent, plural

WARN_SHARE = 0.70  # context use shown in yellow from here
CRIT_SHARE = 0.90  # and in red from here

Level = Literal["ok", "warn", "crit"]


def tokens(n: int) -> str:
    """12345 -> '12.3k': compact counts for narrow status lines."""
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)


@dataclass
class Status:
    """Figures for the status bar, updated from events as a turn runs.

    `budget` is the window to measure use against (the real one, or the 8192 assumed when
    the window is unknown; `window` is then None and shown as "unknown"). The context
    figure reads "counting…" until the first count has come (the REPL's warm-up).
    """

    model: str
    window: int | None
    window_source: str
    budget: int
    context_tokens: int | None = None  # None until the first count (the warm-up's)
    last_turn: Usage | None = None
    compactions: int = 0

    @property
    def share(self) -> float:
        return (self.context_tokens or 0) / self.budget if self.budget else 0.0

    @property
    def level(self) -> Level:
        """By the share as shown (rounded), so "90%" is never shown in the colour of 89."""
        shown = round(100 * self.share) / 100
        return "crit" if shown >= CRIT_SHARE else "warn" if shown >= WARN_SHARE else "ok"

    def update(self, event: Event) -> None:
        if isinstance(event, ModelCallStarted):
            self.context_tokens = event.prompt_tokens
        elif isinstance(event, ModelCallFinished) and event.usage is not None:
            # The reply is now part of the conversation, so it counts as context too.
            self.context_tokens = event.usage.prompt_tokens + event.usage.completion_tokens
        elif isinstance(event, Compacted):
            self.context_tokens = event.tokens_after
            self.compactions += 1
        elif isinstance(event, TurnFinished):  # no figures when cut before any came
            used = event.usage.prompt_tokens or event.usage.completion_tokens
            self.last_turn = event.usage if used else None

    def parts(self, width: int = 200) -> list[tuple[Level, str]]:
        """Status pieces as (level, text); pieces are dropped, least useful first, until
        the line fits `width`. Only the context share carries a level other than ok."""
        window = f"window {self.window}" if self.window else f"window unknown (~{self.budget})"
        ctx = (f"ctx {percent(self.share, 1)} ({tokens(self.context_tokens)}/"
               f"{tokens(self.budget)})" if self.context_tokens is not None
               else "ctx counting…")  # not "0%": the prompt is never empty
        last = "last turn —"
        if self.last_turn is not None:
            last = (f"last turn {tokens(self.last_turn.prompt_tokens)} in/"
                    f"{tokens(self.last_turn.completion_tokens)} out")
        pieces: list[tuple[Level, str]] = [
            ("ok", self.model), ("ok", f"{window} [{self.window_source}]"),
            (self.level, ctx), ("ok", last), ("ok", plural(self.compactions, "compaction")),
        ]
        for drop in (4, 3, 1, 0):  # compactions, turn figures, source, then the model name
            if sum(len(t) + 3 for _, t in pieces) <= width:
                break
            level, text = pieces[drop]
            pieces[drop] = (level, window if drop == 1 else "")
        return [(lvl, text) for lvl, text in pieces if text]

    def text(self, width: int = 200) -> Text:
        """The pieces on one line, for the live region (never wider than `width`)."""
        styles = {"ok": "dim", "warn": "yellow", "crit": "bold red"}
        out = Text(no_wrap=True, overflow="ellipsis")
        for i, (level, piece) in enumerate(self.parts(width)):
            if i:
                out.append(" · ", style="dim")
            out.append(piece, style=styles[level])
        return out
