"""The gate: when to compact, and which rewrite to make.

The engine offers options — rewrites made by the passes, each an `Option` with the
prompt it leaves (calibrated tokens) and the tokens it makes the server compute
again: a local server reuses its cache up to the first token that differs from the
previous request, so a rewrite costs everything after its first change that the
server had already computed. The gate takes, among the options that bring the prompt
to the target, the one that re-processes the fewest tokens per token of room it
makes before the trigger is reached again; so it rewrites as late in the prompt as
frees enough, and prefers large steps to small ones at the same cost.

    due       the prompt reached the trigger (85 % of the input budget)
    choose    an option at or under the target (60 %), as above; None when no option
              of this level reaches it (the engine then goes one level deeper)
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


class Gate:
    """Owns the budget and decides; see the module docstring."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def due(self, tokens: int) -> bool:
        return tokens >= self.budget.trigger

    def enough(self, tokens: int) -> bool:
        return tokens <= self.budget.target

    def choose(self, options: list[Option]) -> Option | None:
        fitting = [o for o in options if self.enough(o.tokens)]
        if not fitting:
            return None

        def cost(option: Option) -> tuple[float, int]:
            room = max(1, self.budget.trigger - option.tokens)
            return option.reprocessed / room, -room

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
