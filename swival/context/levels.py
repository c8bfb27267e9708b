"""Running the compaction levels on the engine's history (the passes themselves are
pure functions in compaction.py).

The gate compacts when the prompt reaches the trigger (85 % of the input budget) and
runs levels from one deeper than the last pass until it is at or below the target
(60 %): large, rare steps, so the next several requests append without rewriting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from swival.context import compaction
from swival.context.core import EngineCore
from swival.events import Compacted
from swival.messages import Message

KEEP_TURNS = 2
# Level 2 re-renders the pinned block, so the server re-reads the whole prompt: make
# that rewrite buy headroom by landing this share of the input budget under the target.
DROP_MARGIN = 0.15

MARKER = re.compile(r"\[(\d+) earlier messages were removed to fit the context window; "
                    r"they are kept in [^\]]*\]")


class Compacting(EngineCore):
    """The gate and the three levels (see compaction.py for what each level does)."""

    def _gate(self, turn: int, reason: str) -> list[Compacted]:
        if self.estimate() < self.budget.trigger:
            return []
        return self._compact_down(turn, reason, self._state.last_level + 1)

    def _compact_down(self, turn: int, reason: str, first: int) -> list[Compacted]:
        """Run levels from `first` up until the prompt is at or below the target."""
        events: list[Compacted] = []
        for level in range(max(1, first), 4):
            event = self._run_level(level, reason, turn)
            if event:
                events.append(event)
            self._state.last_level = level
            if self.estimate() <= self.budget.target:
                break
        return events

    def _run_level(self, level: int, reason: str, turn: int) -> Compacted | None:
        before = self.estimate()
        recap = self._state.recap
        if level == 1:
            new = compaction.shrink(self._history, self._lookup, KEEP_TURNS)
        else:
            if level == 2:
                new, dropped = self._drop_enough()
            else:
                new, dropped = compaction.nuclear(self._history, KEEP_TURNS)
            if dropped:
                recap = self._make_recap(dropped)
            if level == 3 and self._estimate_with(new, recap) > self.budget.target:
                new = compaction.shrink(new, self._lookup, 0)
        if len(new) == len(self._history) and all(
                a is b for a, b in zip(new, self._history, strict=True)):
            return None
        # Level 1 drops no turn, so the pinned block is left as it was: re-rendering it
        # (the ledger moves on every command) would make the server re-read everything.
        self._rewrite(new, recap, repin=level > 1)
        if level > 1:
            self.scope.rewritten()  # dropped turns: stored checkpoint indexes are stale
        event = Compacted(level, reason, before, self.estimate(), turn)
        if self._transcript:
            self._transcript.compacted(event)
        return event

    def _drop_enough(self) -> tuple[list[Message], list[Message]]:
        """Level 2's drop: the lower-scoring half of the older turns, or more, enough
        to land DROP_MARGIN under the target with a new recap if the older turns allow
        (else level 3 follows)."""
        new, dropped = compaction.drop(self._history, self._lookup, KEEP_TURNS)
        aim = max(self.budget.target // 2,
                  self.budget.target - int(self.budget.input_budget * DROP_MARGIN))
        over = self._estimate_with(new, None) + self._recap_tokens() - aim
        if over <= 0 or not dropped:
            return new, dropped
        size = self.counter.message
        freed = sum(size(m) for m in dropped) + int(over / self.calibration.factor) + 1
        return compaction.drop(self._history, self._lookup, KEEP_TURNS, free=freed, size=size)

    def _estimate_with(self, history: list[Message], recap: str | None) -> int:
        """The estimate if the history were `history` with `recap` (and a re-rendered
        pinned block)."""
        saved = self._history, self._state.recap, self._pinned
        self._history, self._state.recap = history, recap
        self._pinned = self._render_pinned()
        estimate = self.estimate()
        self._history, self._state.recap, self._pinned = saved
        return estimate

    def _make_recap(self, dropped: Sequence[Message]) -> str:
        """LLM recap, else checkpoint summaries, else a static marker; merged with the
        previous recap so nothing recapped earlier is lost."""
        previous = self._state.recap
        if self.summarize is not None:
            text = self._recapper().recap(dropped, previous)
            if text:
                return text
        removed = len(dropped)
        if previous:  # fold an earlier marker into this one instead of stacking markers
            found = MARKER.search(previous)
            if found:
                removed += int(found.group(1))
                previous = MARKER.sub("", previous).strip()
        marker = (f"[{removed} earlier messages were removed to fit the context window; "
                  f"they are kept in {self.transcript_path or 'no file (no state directory)'}.]")
        checkpoints = self.knowledge.checkpoint_text()
        parts = [p for p in (previous, checkpoints, marker) if p]
        text = "\n\n".join(dict.fromkeys(parts))
        limit = self._recap_tokens() * 6  # about 1.5x the recap size, in characters
        return text if len(text) <= limit else text[-limit:]
