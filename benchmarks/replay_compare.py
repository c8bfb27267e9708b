"""Swival's compaction choices weighed against the alternatives, for
`python benchmarks/replay.py --compare`: the same scripted sessions and recorded runs,
with the gate deciding as each variant says (swival/context/gate.py, `Policy`), one
row per variant. Every cell gives the re-processed and the recomputed share of
prefill (see replay_measure.py); the last column, what the recorded runs lost (the
task, an edited path, the last error) and how many requests went over the window.

The variants add one choice at a time to the engine as it was before, then take
single choices away from Swival's, so each row shows what one choice buys and what
it costs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from replay_measure import Run, Variant, share

from swival.context.gate import Policy

Measured = tuple[Mapping[int, Sequence[Run]], Mapping[tuple[str, int], Run]]
BEFORE = Policy(wait=False, keep_share=float("inf"), overhead=False)
VARIANTS = (
    Variant("compact at the trigger down to 60 %, the last two turns whole (before)",
            BEFORE, target=0.6),
    Variant("+ the turn before the newest whole only when small",
            Policy(wait=False, overhead=False), target=0.6),
    Variant("+ past the trigger, wait for a small turn, up to the input budget",
            Policy(opportune=0.6, overhead=False, ahead=0), target=0.6),
    Variant("+ each option's cost counts the newest messages",
            Policy(opportune=0.6, ahead=0), target=0.6),
    Variant("+ at a small turn, stop at 65 %", Policy(ahead=0), target=0.6),
    Variant("+ compact down to 55 %", Policy(ahead=0)),
    Variant("+ from 80 %, a small turn compacts down to 55 % (Swival)", Policy()),
    Variant("Swival, the last two turns always whole", Policy(keep_share=float("inf"))),
    Variant("Swival, at a small turn stop at 70 %", Policy(opportune=0.7)),
    Variant("Swival, compacting down to 50 %", Policy(), target=0.5),
    Variant("Swival, compacting before the trigger from 75 %", Policy(ahead=0.1)),
)
SESSIONS = ("investigate", "long-haul")


def _cell(runs: Sequence[Run], windows: Sequence[int]) -> str:
    return ", ".join(f"{w // 1024}K {share([r], 'reprocessed'):.0f}/"
                     f"{share([r], 'recomputed'):.0f}" for r, w in zip(runs, windows, strict=True))


def _losses(replayed: Mapping[int, Sequence[Run]]) -> str:
    lost = {key: sum(1 for runs in replayed.values() for r in runs
                     if key in r.facts and not r.facts[key])
            for key in ("task", "paths", "error")}
    over = sum(r.over for runs in replayed.values() for r in runs)
    found = [f"{n} {key}" for key, n in lost.items() if n]
    return (", ".join(found) or "nothing") + f"; {over} over"


def _replay_cell(replayed: Mapping[int, Sequence[Run]]) -> str:
    return ", ".join(f"{w // 1024}K {share(runs, 'reprocessed'):.0f}/"
                     f"{share(runs, 'recomputed'):.0f}" for w, runs in replayed.items())


def compare(data: Sequence[Any], windows: Sequence[int],
            measure: Callable[[Variant], Measured]) -> str:
    """The table: one row per variant, measured by `measure`."""
    lines = ["| variant | investigate, re-processed/recomputed % | long haul | "
             "recorded runs | recorded runs: lost; requests over the window |",
             "|---|---|---|---|---|"]
    for variant in VARIANTS:
        replayed, scripted = measure(variant)
        sessions = [_cell([scripted[name, w] for w in windows], windows) for name in SESSIONS]
        runs = _replay_cell(replayed) if data else "-"
        lost = _losses(replayed) if data else "-"
        lines.append(f"| {variant.name} | {sessions[0]} | {sessions[1]} | {runs} | {lost} |")
    return "\n".join(lines)
