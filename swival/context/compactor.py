"""Running compaction on the engine's state: the gate's choice among measured options,
level by level, and the one place a rewritten history is committed.

`State` is the engine's mutable state, handed explicitly to every call. Options come
from gate.options (pure passes), are measured (measure.py) and chosen by the gate;
levels 2 and 3 then get a real recap and a re-rendered pinned block (the engine's
`render` and `recaps`), and `commit` records the rewrite (the engine's `record`: the
transcript) and reports it as a `Compacted` event with the tokens it makes the server
compute again.

The emergency drop (level 4, reason "emergency") asks the model nothing and always
leaves the prompt as small as it can be made: the pinned block (ledger, knowledge, a
recap made without the model that names the transcript) and the last turn, its results
shrunk or the turn itself dropped when that is what it takes. It runs instead of levels
2 and 3 when the model wrote no recap, or when the gate fired (before a request, after
tool results) with the prompt at NEARLY_FULL of the input budget or more; and after
level 3 when the prompt still exceeds the input budget. After an overflow the server
reported, levels 2 and 3 still ask for their recap (its requests are sized to fit).
Its note tells the person what went and why (`emergency_note`), and what the model
still sees of their request when that went too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from swival.context import passes
from swival.context.gate import Gate, Option, options
from swival.context.history import History
from swival.context.measure import Measure
from swival.context.recaps import Recaps
from swival.context.snapshot import Scope
from swival.errors import ContextOverflowError
from swival.events import Compacted
from swival.messages import Message
from swival.words import plural

KEEP_TURNS = 2  # level 3 keeps the last two turns (level 1: gate.keep)
# Level 2 re-renders the pinned block, so the server re-reads the whole prompt: make
# that rewrite buy headroom by landing this share of the input budget under the target.
DROP_MARGIN = 0.15
NEARLY_FULL = 0.95  # from this share of the input budget no recap is asked: emergency
EMERGENCY, EMERGENCY_LEVEL = "emergency", 4
# Why an emergency drop made no recap, as its note tells the person.
NO_RECAP, TOO_FULL, STILL_OVER, REJECTED = "no recap", "too full", "still over", "rejected"
CAUSES = {
    NO_RECAP: "the model was asked for one and wrote none (the request failed or came "
              "back empty)",
    TOO_FULL: "the prompt was too close to the window to ask the model for one",
    STILL_OVER: "even the deepest compaction with a recap left the prompt over the window",
    REJECTED: "the server still rejected the prompt after the deepest compaction",
}

# What the emergency drop did to the newest turn: kept it whole, cut its tool results
# down, or dropped it too.
WHOLE, SHRUNK, NOTHING = "whole", "shrunk", "nothing"


# Where the request's text stays for the model (the ledger), in a person's words.
KEPT_FOR_IT = "in the notes Swival keeps at the top of the conversation"


def emergency_note(older: int, shape: str, cause: str, request: tuple[int, int] | None,
                   transcript: str) -> str:
    """What the emergency drop did, for the person: which turns went (`older` turns
    before the newest, and the newest as `shape` says), why without a recap, and, when
    the request itself left the conversation (`request`: the characters of it the
    ledger keeps, of all), what the model still sees of it."""
    done = [f"{plural(older, 'older turn')} {'was' if older == 1 else 'were'} dropped"
            ] if older else []
    if shape == SHRUNK:
        done.append("the current turn's tool results were cut down")
    elif shape == NOTHING:
        done.append("the current turn was dropped too" if older
                    else "the current turn was dropped")
    what = " and ".join(done)
    text = what[0].upper() + what[1:]
    text += (f" without a recap: {CAUSES[cause]}." if older or shape == NOTHING
             else " to fit the window (nothing older was left to drop).")
    if request is not None:
        kept, total = request
        text += (f" Your request was shortened: the model now sees only its first "
                 f"{kept:,} of {total:,} characters, {KEPT_FOR_IT}"
                 if kept < total else " Your request left the conversation: the model "
                 f"still sees it whole {KEPT_FOR_IT}")
        text += ", without anything attached to it."
    return text + f" The whole conversation stays in {transcript}."


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
                 render: Callable[[History], Message | None], recaps: Recaps,
                 record: Callable[[History, Compacted], None]) -> None:
        self.measure, self.gate = measure, gate
        self._render, self.recaps, self._record = render, recaps, record

    def due(self, state: State, turn: int, reason: str, wait: bool = True
            ) -> list[Compacted]:
        """Compact when the prompt reached the trigger, starting one level deeper than
        the last compaction if nothing came in since; but choose the moment (gate.py):
        below the input budget, a rewrite waits for a cheap moment while level 1 could
        still do it, and a cheap moment takes the level-1 option that costs least per
        token of room among those that free enough (gate.Policy). Without `wait` (the
        server has nothing cached to lose), down to the target at once."""
        tokens = self.measure.tokens(state.history)
        waits = wait and self.gate.policy.wait
        if not self.gate.due(tokens):
            return self._early(state, tokens, reason, turn) if waits else []
        if waits and not self.gate.forced(tokens) and state.last_level == 0:
            measured, unsent = self._measured(state, 1), self._unsent(state)
            if not self.gate.cheap(unsent):
                if self.gate.choose(measured) is not None:
                    return []  # level 1 can still do it at a better moment
            else:
                chosen = self.gate.choose(measured, self.gate.opportune(), unsent)
                if chosen is not None:
                    return self._only(state, chosen, reason, turn)
        return self.run(state, turn, reason, state.last_level + 1, hurry=True)

    def _early(self, state: State, tokens: int, reason: str, turn: int) -> list[Compacted]:
        """Just before the trigger (the policy's `ahead`): a cheap moment takes the
        level-1 option that costs least per token of room among those that reach the
        target (not only the opportune share: a rewrite made this early must last)."""
        if state.last_level != 0 or not self.gate.near(tokens):
            return []
        unsent = self._unsent(state)
        if not self.gate.cheap(unsent):
            return []
        chosen = self.gate.choose(self._measured(state, 1), overhead=unsent)
        return self._only(state, chosen, reason, turn) if chosen is not None else []

    def _unsent(self, state: State) -> int:
        """The messages not sent yet (calibrated): a rewrite now makes the server compute
        them in a prompt it rebuilds, on top of what the rewrite itself costs."""
        return self.measure.calibration.apply(self.measure.unsent(state.history, state.sent))

    def _only(self, state: State, option: Option, reason: str, turn: int
              ) -> list[Compacted]:
        """One level-1 rewrite, charged as such."""
        start = self.measure.cost(state.history, state.sent)
        state.last_level = 1
        event = self._apply(state, option, reason, turn)
        return self._charge(state, [event] if event else [], start)

    def run(self, state: State, turn: int, reason: str, first: int,
            hurry: bool = False) -> list[Compacted]:
        """From level `first` on, take the option the gate chooses; when no option of a
        level reaches the target, take that level's largest step and go deeper; the
        emergency drop where the module docstring says (`hurry`: the gate fired). The
        levels run before one request are one rewrite for the server: the last event
        carries what they make it compute again, together."""
        events: list[Compacted] = []
        start = self.measure.cost(state.history, state.sent)
        budget, cause, unsent = self.gate.budget, "", self._unsent(state)
        for level in range(max(1, first), EMERGENCY_LEVEL):
            tokens = self.measure.tokens(state.history)
            if hurry and level > 1 and tokens >= NEARLY_FULL * budget.input_budget:
                cause = TOO_FULL
                break
            measured = self._measured(state, level)
            state.last_level = level
            chosen = self.gate.choose(measured, overhead=unsent) or self._largest(
                measured, level, tokens)
            event = self._apply(state, chosen, reason, turn) if chosen else None
            if chosen is not None and event is None:
                cause = NO_RECAP
                break
            events += [event] if event else []
            if self.gate.enough(self.measure.tokens(state.history)):
                break
        if not cause and self.measure.tokens(state.history) > budget.input_budget:
            cause = STILL_OVER
        if cause:
            events += [e for e in [self.emergency(state, turn, cause)] if e]
        return self._charge(state, events, start)

    @staticmethod
    def _largest(measured: list[Option], level: int, tokens: int) -> Option | None:
        """The level's largest step, when none reaches the target; None when a level that
        drops turns would not even make the prompt smaller (its pinned block and recap
        outweigh the few turns it could drop): that costs a recap call and a rewrite of
        the whole prompt for nothing, so the next level follows at once."""
        smallest = min(measured, key=lambda o: o.tokens, default=None)
        if smallest is None or (level > 1 and smallest.tokens >= tokens):
            return None
        return smallest

    def overflow(self, state: State, error: ContextOverflowError, turn: int,
                 sent: int | None) -> list[Compacted]:
        """The server rejected (or cut) the last prompt, which we counted as `sent` raw
        tokens: adopt its figures, compact one level deeper than last time (past level
        3, the emergency drop again); [] when there is nothing left to compact."""
        budget, calibration = self.gate.budget, self.measure.calibration
        learned = error.window is not None and error.window < budget.window
        if learned and error.window is not None:
            self.gate.budget = replace(budget, window=error.window)
        if error.kind == "truncated" and learned:
            pass  # the count is what the server kept, not the prompt: the window is the lesson
        elif error.prompt_tokens and sent is not None:
            calibration.jump(error.prompt_tokens, sent)
        else:
            # No figure: the rejected prompt was at least as large as the input budget
            # (else the server would have taken it), and we undercounted by a tenth at least.
            raw = self.measure.raw(state.history)
            least = self.gate.budget.input_budget + 1
            calibration.jump(max(int(raw * calibration.factor * 1.1), least), raw)
        events = self.run(state, turn, "server reported overflow", state.last_level + 1)
        if not events:  # past level 3: the server's word outweighs our estimate
            events = [e for e in [self.emergency(state, turn, REJECTED)] if e]
        return events

    def _charge(self, state: State, events: list[Compacted], start: int) -> list[Compacted]:
        if not events:
            return events
        total = max(0, self.measure.cost(state.history, state.sent) - start)
        state.reprocessed += total
        return [replace(e, reprocessed=0) for e in events[:-1]] + [
            replace(events[-1], reprocessed=total)]

    def by_request(self, state: State, level: int, why: tuple[str, int],
                   focus: str | None = None) -> Compacted | None:
        """/compact (level 1) and /compact --drop (levels 1 then 2, the recap guided by
        `focus`), whatever the target, each as far as it goes: one event with the
        deepest level that changed something (the emergency drop when the model wrote
        no recap), or None."""
        (reason, turn), before = why, self.measure.tokens(state.history)
        start = self.measure.cost(state.history, state.sent)
        done = []
        for n in range(1, level + 1):
            best = min(self._measured(state, n), key=lambda o: o.tokens, default=None)
            event = self._apply(state, best, reason, turn, focus) if best else None
            if best is not None and event is None:
                event = self.emergency(state, turn, NO_RECAP)
            done += [event] if event else []
        if not done:
            return None
        state.last_level = done[-1].level
        cost = self._charge(state, done, start)[-1].reprocessed
        return replace(done[-1], tokens_before=before,
                       tokens_after=self.measure.tokens(state.history), reprocessed=cost)

    def _measured(self, state: State, level: int) -> list[Option]:
        budget = self.gate.budget
        aim = max(budget.target // 2, budget.target - int(budget.input_budget * DROP_MARGIN))
        factor = self.measure.calibration.factor
        over = int((self.measure.tokens(state.history) - aim) / factor) + self.recaps.tokens()
        keep = self.gate.keep(state.history) if level == 1 else KEEP_TURNS
        found = options(state.history, level, keep, self.measure.counter.message, over)
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
            recap = self.recaps.tokens()
        raw = self.measure.raw(history, remember=False) + recap
        cost = self.measure.cost(history, state.sent) + recap
        return Option(level, history, dropped, self.measure.calibration.apply(raw), cost)

    def _apply(self, state: State, option: Option, reason: str, turn: int,
               focus: str | None = None) -> Compacted | None:
        """Make the chosen option the history; levels 2 and 3 with the model's recap of
        what they drop (None, nothing changed, when it wrote none)."""
        history = option.history
        if option.level > 1:
            recap = self.recaps.write(state.history, option.dropped, focus)
            if recap is None:
                return None
            history = self._pinned(history, recap)
            state.scope = state.scope.rewritten()  # turn indexes moved
        return self.commit(state, history, option.level, (reason, turn))

    def _pinned(self, history: History, recap: str) -> History:
        history = replace(history, recap=recap, pinned=None)
        return replace(history, pinned=self._render(history))

    def emergency(self, state: State, turn: int, cause: str) -> Compacted | None:
        """The emergency drop (see the module docstring): the first of last turn whole,
        last turn shrunk, no turn at all that reaches the target, else the smallest.
        `cause` (one of the CAUSES) is why no recap was made, as the event's note tells
        the person. None when there is nothing left to drop."""
        history = state.history
        kept, dropped = passes.nuclear(history, 1)
        everything = history.messages()
        shapes = [(WHOLE, kept, dropped),
                  (SHRUNK, passes.shrink(kept, 0, self.measure.counter.message), dropped),
                  (NOTHING, kept.with_turns(()), everything)]
        made = [(shape, self._pinned(h, self.recaps.marker(history, gone)))
                for shape, h, gone in shapes if h.turns != history.turns]
        if not made:
            return None
        sizes = [self.measure.tokens(h, remember=False) for _, h in made]
        fitting = [m for m, size in zip(made, sizes, strict=True) if self.gate.enough(size)]
        shape, chosen = fitting[0] if fitting else made[sizes.index(min(sizes))]
        state.scope, state.last_level = state.scope.rewritten(), EMERGENCY_LEVEL
        event = self.commit(state, chosen, EMERGENCY_LEVEL, (EMERGENCY, turn))
        requests = [t for t in history.turns if t.head.role == "user"]
        gone = bool(requests) and requests[-1] not in chosen.turns
        return replace(event, note=emergency_note(
            len(history.turns) - 1, shape, cause, self.recaps.request() if gone else None,
            self.recaps.transcript))

    def commit(self, state: State, history: History, level: int,
               why: tuple[str, int]) -> Compacted:
        """Make `history` the engine's (the transcript already has every message) and
        report it, with the tokens it makes the server compute again (a chain of levels
        is charged by `run`)."""
        before = self.measure.tokens(state.history)
        added = max(0, self.measure.cost(history, state.sent)
                    - self.measure.cost(state.history, state.sent))
        state.history = history
        self.measure.calibration.rewritten()
        event = Compacted(level, why[0], before, self.measure.tokens(history), why[1], added)
        state.compactions += 1
        self._record(history, event)
        return event
