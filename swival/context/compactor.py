"""Running compaction on the engine's state: the gate's choice among measured options,
level by level, and the one place a rewritten history is committed.

`State` is the engine's mutable state, handed explicitly to every call. Options come
from gate.options (pure passes), are measured (measure.py) and chosen by the gate;
levels 2 and 3 then get a real recap and a re-rendered pinned block (the engine's
`render` and `recap`), and `commit` records the rewrite (the engine's `record`: the
transcript) and reports it as a `Compacted` event with the tokens it makes the server
compute again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from swival.context.gate import Gate, Option, options
from swival.context.history import History
from swival.context.measure import Measure
from swival.context.snapshot import Scope
from swival.events import Compacted
from swival.messages import Message

KEEP_TURNS = 2  # levels 1 and 3 keep the last two turns whole
RECAP_SHARE, RECAP_MAX = 0.08, 1200  # recap size: share of the input budget, at most
# Level 2 re-renders the pinned block, so the server re-reads the whole prompt: make
# that rewrite buy headroom by landing this share of the input budget under the target.
DROP_MARGIN = 0.15


@dataclass
class State:
    """The engine's conversation state."""

    history: History = field(default_factory=History)
    sent: History = field(default_factory=History)  # what the last request held
    scope: Scope = field(default_factory=Scope)
    last_level: int = 0  # deepest level run since new messages came in
    compactions: int = 0
    reprocessed: int = 0  # tokens all rewrites made the server compute again


class Compactor:
    def __init__(self, measure: Measure, gate: Gate,
                 render: Callable[[History], Message | None],
                 recap: Callable[[History, Sequence[Message]], str],
                 record: Callable[[History, Compacted], None]) -> None:
        self.measure, self.gate = measure, gate
        self._render, self._recap, self._record = render, recap, record

    def recap_tokens(self) -> int:
        return min(RECAP_MAX, int(self.gate.budget.input_budget * RECAP_SHARE))

    def due(self, state: State, turn: int, reason: str) -> list[Compacted]:
        """Compact when the prompt reached the trigger, starting one level deeper than
        the last compaction if nothing came in since."""
        if not self.gate.due(self.measure.tokens(state.history)):
            return []
        return self.run(state, turn, reason, state.last_level + 1)

    def run(self, state: State, turn: int, reason: str, first: int) -> list[Compacted]:
        """From level `first` on, take the option the gate chooses; when no option of a
        level reaches the target, take that level's largest step and go deeper. The
        levels run before one request are one rewrite for the server: the last event
        carries what they make it compute again, together."""
        events: list[Compacted] = []
        start = self.measure.cost(state.history, state.sent)
        for level in range(max(1, first), 4):
            measured = self._measured(state, level)
            state.last_level = level
            chosen = self.gate.choose(measured) or min(measured, key=lambda o: o.tokens,
                                                       default=None)
            if chosen is not None:
                events.append(self._apply(state, chosen, reason, turn))
            if self.gate.enough(self.measure.tokens(state.history)):
                break
        return self._charge(state, events, start)

    def _charge(self, state: State, events: list[Compacted], start: int) -> list[Compacted]:
        if not events:
            return events
        total = max(0, self.measure.cost(state.history, state.sent) - start)
        state.reprocessed += total
        return [replace(e, reprocessed=0) for e in events[:-1]] + [
            replace(events[-1], reprocessed=total)]

    def by_request(self, state: State, level: int, reason: str, turn: int) -> Compacted | None:
        """/compact (level 1) and /compact --drop (levels 1 then 2), whatever the
        target, each as far as it goes: one event with the deepest level that changed
        something, or None."""
        before = self.measure.tokens(state.history)
        start = self.measure.cost(state.history, state.sent)
        done = []
        for n in range(1, level + 1):
            best = min(self._measured(state, n), key=lambda o: o.tokens, default=None)
            if best is not None:
                done.append(self._apply(state, best, reason, turn))
        if not done:
            return None
        state.last_level = done[-1].level
        cost = self._charge(state, done, start)[-1].reprocessed
        return Compacted(done[-1].level, reason, before, self.measure.tokens(state.history),
                         turn, cost)

    def _measured(self, state: State, level: int) -> list[Option]:
        budget = self.gate.budget
        aim = max(budget.target // 2, budget.target - int(budget.input_budget * DROP_MARGIN))
        factor = self.measure.calibration.factor
        over = int((self.measure.tokens(state.history) - aim) / factor) + self.recap_tokens()
        found = options(state.history, level, KEEP_TURNS, self.measure.counter.message, over)
        return [self._option(state, level, h, d) for h, d in found
                if h.turns != state.history.turns]

    def _option(self, state: State, level: int, history: History,
                dropped: tuple[Message, ...]) -> Option:
        """An option with its size and its cost to the server's cache; levels 2 and 3
        re-render the pinned block, counted here with a recap of the usual size."""
        recap = 0
        if level > 1 and dropped:
            history = replace(history, recap=None, pinned=None)
            history = replace(history, pinned=self._render(history))
            recap = self.recap_tokens()
        raw = self.measure.raw(history, remember=False) + recap
        cost = self.measure.cost(history, state.sent) + recap
        return Option(level, history, dropped, self.measure.calibration.apply(raw), cost)

    def _apply(self, state: State, option: Option, reason: str, turn: int) -> Compacted:
        history = option.history
        if option.level > 1:
            history = replace(history, recap=self._recap(state.history, option.dropped),
                              pinned=None)
            history = replace(history, pinned=self._render(history))
            state.scope = state.scope.rewritten()  # turn indexes moved
        return self.commit(state, history, option.level, (reason, turn))

    def commit(self, state: State, history: History, level: int,
               why: tuple[str, int]) -> Compacted:
        """Make `history` the engine's (the transcript already has every message) and
        report it, with the tokens it makes the server compute again (a chain of levels
        is charged by `run`)."""
        before = self.measure.tokens(state.history)
        added = max(0, self.measure.cost(history, state.sent)
                    - self.measure.cost(state.history, state.sent))
        state.history = history
        event = Compacted(level, why[0], before, self.measure.tokens(history), why[1], added)
        state.compactions += 1
        self._record(history, event)
        return event
