"""Where compaction, /restore and the proactive checkpoints get their recaps: written by
the model through the summarizer (summarize.Recapper, sized to the window), or, for
compaction when there is no model or it wrote none, made from what the harness kept
(summarize.fallback_recap)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from swival.context.gate import Gate
from swival.context.history import History
from swival.context.summarize import Recapper, Summarizer, fallback_recap
from swival.messages import Message

RECAP_SHARE, RECAP_MAX = 0.08, 1200  # recap size: share of the input budget, at most


class Recaps:
    """The engine's recaps. `summarize`: the model's tool-free call (None: no model
    recaps; /model hands another); `transcript`: where every message is kept, as the
    recaps name it; `checkpoints`: the proactive checkpoints' summaries so far;
    `request`: how much of the newest request the ledger keeps (characters kept, in
    all)."""

    def __init__(
        self,
        summarize: Summarizer | None,
        count: Callable[[str], int],
        gate: Gate,
        transcript: str,
        checkpoints: Callable[[], str | None],
        request: Callable[[], tuple[int, int]],
    ) -> None:
        self.summarize, self.transcript = summarize, transcript
        self._count, self._gate, self._checkpoints = count, gate, checkpoints
        self.request = request

    def tokens(self) -> int:
        """The size asked of a recap: a share of the input budget, at most RECAP_MAX."""
        return min(RECAP_MAX, int(self._gate.budget.input_budget * RECAP_SHARE))

    def recapper(self) -> Recapper | None:
        """The model's recaps, sized to the window in use; None without a model."""
        if self.summarize is None:
            return None
        return Recapper(
            self.summarize,
            self._count,
            self.transcript,
            self._gate.budget.input_budget,
            self.tokens(),
        )

    def write(self, history: History, dropped: Sequence[Message], focus: str | None) -> str | None:
        """A model recap of `dropped` merged with the previous one, guided by the `focus`
        the user gave (or None); None when there is no model or it wrote none (the
        compactor then drops without one)."""
        recapper = self.recapper()
        return recapper.recap(dropped, history.recap, focus) if recapper else None

    def marker(self, history: History, dropped: Sequence[Message]) -> str:
        """A recap made without the model: the previous recap, the checkpoint summaries
        and a marker naming the transcript (summarize.fallback_recap)."""
        return fallback_recap(
            history.recap, len(dropped), self._checkpoints(), self.transcript, self.tokens() * 6
        )

    def checkpoint(self, messages: Sequence[Message]) -> str | None:
        """A proactive checkpoint's summary of `messages`; None without a model."""
        recapper = self.recapper()
        return recapper.recap(messages, None) if recapper else None
