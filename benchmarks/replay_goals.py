"""The replay's figures against the goals issue 12 sets ("Numbers"), as a table for
docs/benchmarks.md: every figure in it is one benchmarks/replay.py measured in the
same run.

    replays, per window        0 requests over the window; task and edited paths kept
                               in every final request; the last error in 95 % or more
    engine                     95th percentile of compacting calls on a full 32K
                               history at most 20 ms (CPU time of the engine's thread),
                               checked on the 32K replays' compacting calls (with and
                               without the garbage collector's pauses within them) and
                               on built full 32K histories
    scripted sessions          re-processed and recomputed shares of prefill at most
                               25 % at 8K, 12 % at 16K, 5 % at 32K
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from replay_measure import Run, p95, share

SHARE_LIMITS = {8192: 25, 16384: 12, 32768: 5}  # % of prefill, per window
ENGINE_MS = 20.0
ERROR_KEPT = 95  # % of runs with a last error


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _kept(runs: Sequence[Run], key: str) -> tuple[int, int]:
    have = [r.facts[key] for r in runs if key in r.facts]
    return sum(have), len(have)


def _replays(replayed: Mapping[int, Sequence[Run]]) -> list[str]:
    rows = []
    for window, runs in replayed.items():
        label = f"{window // 1024}K"
        over = sum(r.over for r in runs)
        rows.append(f"| replays {label}: requests over the window | 0 | {over} | "
                    f"{_met(over == 0)} |")
        for key, name in (("task", "task"), ("paths", "edited paths")):
            kept, of = _kept(runs, key)
            rows.append(f"| replays {label}: {name} kept | 100 % | {kept}/{of} | "
                        f"{_met(kept == of)} |")
        kept, of = _kept(runs, "error")
        rows.append(f"| replays {label}: last error kept | ≥ {ERROR_KEPT} % | {kept}/{of} | "
                    f"{_met(100 * kept >= ERROR_KEPT * of)} |")
    return rows


def _shares(scripted: Mapping[tuple[str, int], Run]) -> list[str]:
    rows = []
    for (name, window), run in scripted.items():
        limit = SHARE_LIMITS.get(window)
        if limit is None:
            continue
        figures = [share([run], "reprocessed"), share([run], "recomputed")]
        shown = " / ".join(f"{f:.1f} %" for f in figures)
        rows.append(f"| {name} {window // 1024}K: re-processed / recomputed | ≤ {limit} % | "
                    f"{shown} | {_met(all(f <= limit for f in figures))} |")
    return rows


def _engine(replayed: Mapping[int, Sequence[Run]], full_cpu_ms: Sequence[float]) -> list[str]:
    measures = []
    runs = replayed.get(32768, ())
    calls = [m for r in runs for m in r.engine_ms]
    if calls:
        measures += [
            (f"the 32K replays' {len(calls)} compacting calls, CPU", p95([m[1] for m in calls])),
            ("the same calls, CPU less the garbage collector's pauses",
             p95([m[2] for m in calls]))]
    measures.append((f"a built full 32K history ({len(full_cpu_ms)} histories), CPU",
                     p95(full_cpu_ms)))
    return [f"| engine, 95th percentile: {what} | ≤ {ENGINE_MS:.0f} ms | {ms:.1f} ms | "
            f"{_met(ms <= ENGINE_MS)} |" for what, ms in measures]


def goals(replayed: Mapping[int, Sequence[Run]], scripted: Mapping[tuple[str, int], Run],
          full_cpu_ms: Sequence[float]) -> list[str]:
    """The table's lines (see the module docstring)."""
    return [
        "| goal (issue 12) | target | measured | met |",
        "|---|---|---|---|",
        *_replays(replayed),
        *_engine(replayed, full_cpu_ms),
        *_shares(scripted),
    ]
