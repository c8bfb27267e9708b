"""The gate: when to compact, and which rewrite to make.

The engine offers options — rewrites made by the passes, each an `Option` with the
prompt it leaves (calibrated tokens) and the tokens it makes the server compute
again: a local server reuses its cache up to the first token that differs from the
previous request, so a rewrite costs everything after its first change that the
server had already computed. Among the options that leave the prompt at or under an
aim, the gate takes the one that re-processes the fewest tokens per token of room it
makes before the trigger is reached again; so it rewrites as late in the prompt as
frees enough, and prefers large steps to small ones at the same cost.

When. From the trigger (85 % of the input budget) a rewrite is due, but the moment
matters: compacting just after a large result makes the server compute that result
in a prompt that shrank, and such a moment is put off while level 1 could still do
the job later, up to the input budget itself (the prompt never goes past it). A
moment is cheap when the messages not yet sent (the newest turn) are small; from
5 % of the input budget below the trigger (80 %) a cheap moment compacts at once,
down to the target, so the rewrite the next large result would force is made before
it instead.

    near      the prompt came within 5 % of the input budget of the trigger (80 %)
    due       the prompt reached the trigger
    forced    the prompt reached the input budget: compact now, whatever it costs
    cheap     the newest turn is small (5 % of the input budget at most)
    keep      how many of the newest turns level 1 keeps whole
    choose    the option, as above, at or under `aim` (the target, 55 %, or 65 % at
              a cheap moment past the trigger); None when no option reaches it

The numbers are a `Policy`.
"""

from __future__ import annotations

from dataclasses import dataclass

from swival.context import passes
from swival.context.budget import Budget
from swival.context.history import Count, History
from swival.messages import Message


@dataclass(frozen=True)
class Option:
    level: int
    history: History
    dropped: tuple[Message, ...]  # what a recap must cover (levels 2 and 3)
    tokens: int  # the prompt after it, calibrated
    reprocessed: int  # tokens the server must compute again because of it


@dataclass(frozen=True)
class Policy:
    """How the gate times and sizes rewrites; the defaults are what Swival does, the
    other values what `python benchmarks/replay.py --compare` weighs them against."""

    wait: bool = True  # past the trigger, wait for a cheap moment (up to the input budget)
    cheap_share: float = 0.05  # a newest turn this small (share of the budget) is cheap
    # At a cheap moment a rewrite need not go down to the target: one that brings the
    # prompt to this share of the input budget will do, the cheapest per token of room.
    opportune: float = 0.65
    keep_share: float = 0.05  # the turn before the newest stays whole up to this share
    overhead: bool = True  # count the newest messages in every option's cost
    # This much of the input budget below the trigger (80 % with the default 85 %), a
    # cheap moment compacts at once, down to the target (0: never). It spares a session
    # the rewrite it would make right after a large result at the input budget; going
    # all the way down keeps rewrites as rare as waiting for the trigger does
    # (`benchmarks/replay.py --compare`).
    ahead: float = 0.05


class Gate:
    """Owns the budget and decides; see the module docstring."""

    def __init__(self, budget: Budget, policy: Policy | None = None) -> None:
        self.budget, self.policy = budget, policy or Policy()

    def due(self, tokens: int) -> bool:
        return tokens >= self.budget.trigger

    def near(self, tokens: int) -> bool:
        ahead = self.policy.ahead * self.budget.input_budget
        return self.policy.ahead > 0 and tokens >= self.budget.trigger - ahead

    def forced(self, tokens: int) -> bool:
        return tokens >= self.budget.input_budget

    def cheap(self, unsent: int) -> bool:
        return unsent <= self.policy.cheap_share * self.budget.input_budget

    def enough(self, tokens: int) -> bool:
        return tokens <= self.budget.target

    def opportune(self) -> int:
        return int(self.policy.opportune * self.budget.input_budget)

    def keep(self, history: History) -> int:
        """How many of the newest turns level 1 keeps whole: the newest (the model may
        not have seen it yet), and the one before it while it is small (keep_share, our
        count): a large one is what a rewrite behind it would make the server read
        again, and it is the floor of what every rewrite costs."""
        turns = history.turns
        limit = self.policy.keep_share * self.budget.input_budget
        return 2 if len(turns) >= 2 and turns[-2].tokens <= limit else 1

    def choose(self, options: list[Option], aim: int | None = None,
               overhead: int = 0) -> Option | None:
        """The option, at or under `aim` (the target by default), that costs least per
        token of room; `overhead` is what any rewrite now costs on top (the newest
        messages, computed in a prompt the server rebuilds)."""
        limit = self.budget.target if aim is None else aim
        fitting = [o for o in options if o.tokens <= limit]
        if not fitting:
            return None
        extra = overhead if self.policy.overhead else 0

        def cost(option: Option) -> tuple[float, int]:
            room = max(1, self.budget.trigger - option.tokens)
            return (option.reprocessed + extra) / room, -room

        return min(fitting, key=cost)


MAX_SHRINK_OPTIONS = 24  # level-1 starting points measured per compaction


def options(history: History, level: int, keep: int, count: Count, free: int
            ) -> list[tuple[History, tuple[Message, ...]]]:
    """The rewrites to weigh at `level`, each with the messages it drops:

    1  shrink the old turns from a starting turn on — every turn where shrinking would
       change something is a start, so late starts (cheap for the cache, small) and the
       earliest one (everything old) are all weighed;
    2  drop the lower-scoring half of the older turns, or enough of them to free `free`
       tokens (raw), whichever is more;
    3  keep only the last `keep` turns, their results as they are or shrunk.
    """
    if level == 1:
        end = passes.old_end(history, keep)
        shrunk = [passes.shrunk(t, count) for t in history.turns[:end]]
        starts = [i for i, t in enumerate(shrunk) if t is not history.turns[i]]
        if len(starts) > MAX_SHRINK_OPTIONS:  # the earliest, and evenly spaced later ones
            step = len(starts) / MAX_SHRINK_OPTIONS
            starts = [starts[int(n * step)] for n in range(MAX_SHRINK_OPTIONS)]
        return [(history.with_turns(history.turns[:j] + tuple(shrunk[j:])
                                    + history.turns[end:]), ()) for j in starts]
    if level == 2:
        half = passes.drop(history, keep)
        enough = passes.drop(history, keep, free)
        return [half, enough] if len(enough[1]) > len(half[1]) else [half]
    kept, dropped = passes.nuclear(history, keep)
    return [(kept, dropped), (passes.shrink(kept, 0, count), dropped)]
