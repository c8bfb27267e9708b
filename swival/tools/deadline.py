"""Time budgets for in-process tool work, so no argument can stall a turn.

A tool creates one `Deadline` per call. Loops check `expired` between steps (files, lines,
directory entries) and stop with what they have; every regular-expression match gets
`timeout(cap)` seconds, which the `regex` module enforces inside the match itself — the
only way to stop a pattern that backtracks catastrophically on one line.
"""

from __future__ import annotations

import time

# The most a single regex match may take. Real patterns need microseconds per line, so a
# match that runs this long is backtracking catastrophically. The regex module counts
# processor time, so on a busy machine the match may last longer by the clock.
MATCH_SECONDS = 1.0


class Deadline:
    """`seconds` from now, on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self._end

    def timeout(self, cap: float = MATCH_SECONDS) -> float:
        """Seconds one step may take: `cap`, or what is left when that is less (at least a
        millisecond, so a step started just before the end fails fast instead of never)."""
        return max(0.001, min(cap, self._end - time.monotonic()))
