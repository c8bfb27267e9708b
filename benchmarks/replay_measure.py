"""What benchmarks/replay.py measures, and the agent it measures (kept apart so both
the recorded runs and the scripted scenarios use the very same code).

    requests      model calls the agent made (recap calls apart)
    over window   requests whose prompt plus the reply's max_tokens exceed the window
    prefill       per request, the tokens after the longest run of messages identical
                  to the previous request's (what a local server computes again: the
                  tool schemas come first in chat templates, so they are shared), plus
                  every recap call in full
    re-processed  the part of a request's prefill beyond what the prompt grew by: tokens
                  computed again only because a rewrite changed an earlier part (when a
                  rewrite shrinks the prompt, this counts the request's new messages too)
    recomputed    the same, without the new messages (those after the previous request's
                  last message, found by the call it answers when a rewrite shrank it):
                  tokens the server had in its cache and must compute again (what the
                  engine reports in Compacted events)
    L1/L2/L3/emergency  compactions per level (emergency: the drop without a model call)
    kept          final requests that still hold the task, the edited paths, the last
                  error (message text and tool-call arguments both count)
    engine ms     mean and 95th percentile of the engine calls that compacted, less the
                  time spent in the summarizer (a model call, here the replay's stand-in):
                  CPU time of the thread (time.thread_time, what the engine itself
                  costs) and wall time (which grows with whatever else the machine runs);
                  and the CPU time less the garbage collector's pauses that fell inside
                  the call (timed through gc.callbacks: a collection is set off by
                  whatever allocation crosses the threshold, often the replay's own)

A recap call is counted in full and is assumed not to evict the conversation from the
server's cache (a server with two slots, or llama.cpp's prompt cache in RAM, keeps it).
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.config import Settings
from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.context.gate import Policy
from swival.context.tokens import TokenCounter
from swival.events import Compacted
from swival.messages import Message
from swival.prompts import system_prompt
from swival.providers.base import ChatRequest, Provider
from swival.tools.base import ToolContext
from swival.tools.catalog import session_registry
from swival.tools.fetch_policy import FetchPolicy


def _clocks() -> tuple[float, float]:
    """(wall, CPU of this thread) in seconds: on a machine shared with other jobs the
    wall time grows with their load; the thread's CPU time counts the engine's own work."""
    return time.perf_counter(), time.thread_time()


class GcPauses:
    """The thread CPU seconds the garbage collector has spent since `install()`, from
    gc.callbacks (a collection runs in the thread whose allocation set it off)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.seconds += time.thread_time() - self._started

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)


PAUSES = GcPauses()  # one for the process: every engine reads its running total


class TimedEngine(ContextEngine):
    """The real engine, timing the calls that compacted (ms: wall, CPU, and CPU less
    the collector's pauses within the call). The time spent in the summarizer (a model
    call; here the replay's stand-in) is not the engine's: it is left out."""

    compacting_ms: list[tuple[float, float, float]]
    model_seconds: list[tuple[float, float]]

    def _spent(self) -> tuple[float, float, float]:
        wall, cpu = _clocks()
        wall -= sum(m[0] for m in self.model_seconds)
        cpu -= sum(m[1] for m in self.model_seconds)
        return wall, cpu, cpu - PAUSES.seconds

    def _timed(self, events: Sequence[object], started: tuple[float, float, float]) -> None:
        if any(isinstance(e, Compacted) for e in events):
            now = self._spent()
            self.compacting_ms.append(((now[0] - started[0]) * 1000,
                                       (now[1] - started[1]) * 1000,
                                       (now[2] - started[2]) * 1000))

    def prepare(self, turn: int) -> Any:
        started = self._spent()
        prepared = super().prepare(turn)
        self._timed(prepared.events, started)
        return prepared

    def after_tool_batch(self, turn: int) -> list[Any]:
        started = self._spent()
        events = super().after_tool_batch(turn)
        self._timed(events, started)
        return events


def _timed_summarizer(model: Provider, spent: list[tuple[float, float]]) -> Any:
    summarize = make_summarizer(model)

    def timed(instructions: str, messages: Sequence[Message]) -> str | None:
        started = _clocks()
        try:
            return summarize(instructions, messages)
        finally:
            now = _clocks()
            spent.append((now[0] - started[0], now[1] - started[1]))

    return timed


@dataclass(frozen=True)
class Variant:
    """How the engine decides when and what to compact: Swival's choice (the defaults)
    or one it is compared with (benchmarks/replay_compare.py)."""

    name: str = "Swival"
    policy: Policy = field(default_factory=Policy)
    target: float = ContextSettings.compaction_target


def build_agent(root: Path, window: int, model: Provider, variant: Variant | None = None
                ) -> tuple[Agent, TimedEngine]:
    """Swival's real prompt, tools (those a default session sends) and engine around
    `model`, working in `root`, the gate deciding as `variant` says. A fixed session id
    keeps the transcript path that recaps name, so every figure repeats from run to run."""
    variant = variant or Variant()
    settings = Settings(project_root=root)  # a default session's tools, task included
    registry = session_registry(settings, fetch=FetchPolicy(settings.fetch).enabled)
    spent: list[tuple[float, float]] = []
    engine = TimedEngine(ContextSettings(window=window, compaction_target=variant.target),
                         system_prompt(root), registry.schemas(),
                         storage=Storage(root / ".swival", "replay"),
                         server=ServerAid(_timed_summarizer(model, spent)))
    engine.gate.policy = variant.policy
    engine.compacting_ms, engine.model_seconds = [], spent
    PAUSES.install()
    agent = Agent(model, registry, engine, ToolContext(root=root), AgentConfig(max_turns=10_000))
    return agent, engine


@dataclass
class Run:
    """Measurements of one run at one window."""

    requests: int = 0
    over: int = 0
    prefill: int = 0
    recap_prefill: int = 0
    reprocessed: int = 0
    recomputed: int = 0
    levels: Counter[int] = field(default_factory=Counter)
    facts: dict[str, bool] = field(default_factory=dict)
    engine_ms: list[tuple[float, float, float]] = field(default_factory=list)  # wall, CPU, CPU-GC


class Meter:
    """Adds up prefill and re-processing over a run's requests, in order."""

    def __init__(self, counter: TokenCounter, window: int) -> None:
        self.counter, self.window = counter, window
        self.previous: Sequence[Message] = ()
        self.previous_tokens = 0

    def tokens(self, request: ChatRequest) -> int:
        return self.counter.messages(request.messages) + self.counter.schemas(request.tools)

    def add(self, request: ChatRequest, recap: bool, run: Run) -> None:
        tokens = self.tokens(request)
        if recap:
            run.recap_prefill += tokens
            run.prefill += tokens
            return
        shared = 0
        for old, new in zip(self.previous, request.messages, strict=False):
            if old is not new and old.to_dict() != new.to_dict():
                break
            shared += 1
        prefill = (sum(self.counter.message(m) for m in request.messages[shared:]) if shared
                   else tokens)
        run.requests += 1
        run.over += tokens + request.max_output_tokens > self.window
        run.prefill += prefill
        if self.previous:
            run.reprocessed += max(0, prefill - max(0, tokens - self.previous_tokens))
            run.recomputed += max(0, prefill - self._new(request.messages))
        self.previous, self.previous_tokens = request.messages, tokens

    def _new(self, messages: Sequence[Message]) -> int:
        """Tokens of the messages after the previous request's last one (the reply and
        the results that came since): computed whatever happens to the rest."""
        last = _identity(self.previous[-1])
        for index in range(len(messages) - 1, -1, -1):
            if _identity(messages[index]) == last:
                return sum(self.counter.message(m) for m in messages[index + 1:])
        return 0


def _identity(message: Message) -> object:
    """What names a message across a rewrite that shortens it: a tool result by the call
    it answers, an assistant message by its calls; anything else by its content."""
    if message.role == "tool":
        return ("tool", message.tool_call_id)
    if message.tool_calls:
        return ("calls", tuple(c.id for c in message.tool_calls))
    return message.to_dict()


def text_of(messages: Sequence[Message]) -> str:
    """Message texts and tool-call arguments, for survival checks."""
    return "\n".join(m.content + "".join(c.arguments_json() for c in m.tool_calls)
                     for m in messages)


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)] if ordered else 0.0


def share(runs: Sequence[Run], measure: str) -> float:
    """`measure` ("reprocessed" or "recomputed") as a share of the runs' prefill, in %."""
    prefill = sum(r.prefill for r in runs)
    return 100 * sum(getattr(r, measure) for r in runs) / max(1, prefill)


def times(runs: Sequence[Run]) -> str:
    """CPU mean / p95 (wall mean / p95) [CPU less GC pauses, mean / p95] of the
    compacting engine calls, in ms."""
    wall, cpu, quiet = ([m[k] for r in runs for m in r.engine_ms] for k in (0, 1, 2))
    if not wall:
        return "-"
    return (f"{statistics.fmean(cpu):.1f} / {p95(cpu):.1f} "
            f"({statistics.fmean(wall):.1f} / {p95(wall):.1f}) "
            f"[{statistics.fmean(quiet):.1f} / {p95(quiet):.1f}]")


def row(label: str, runs: Sequence[Run], keys: Sequence[str]) -> str:
    """One table row: the runs of one window (or one scenario at one window)."""
    prefill = sum(r.prefill for r in runs)
    again = sum(r.reprocessed for r in runs)
    cached = sum(r.recomputed for r in runs)
    levels = "/".join(str(sum(r.levels[n] for r in runs)) for n in (1, 2, 3, 4))

    def kept(key: str) -> str:
        have = [r.facts[key] for r in runs if key in r.facts]
        return f"{sum(have)}/{len(have)}"

    facts = " | ".join(kept(k) for k in keys)
    return (f"| {label} | {sum(r.requests for r in runs):,} | {sum(r.over for r in runs)} | "
            f"{prefill:,} ({sum(r.recap_prefill for r in runs):,}) | "
            f"{again:,} ({share(runs, 'reprocessed'):.0f} %) | "
            f"{cached:,} ({share(runs, 'recomputed'):.0f} %) | {levels} | {facts} | "
            f"{times(runs)} |")


def header(first: str, keys: Sequence[str]) -> list[str]:
    names = {"task": "task kept", "paths": "edited paths kept", "error": "last error kept"}
    return [f"| {first} | requests | over window | prefill (recaps) | re-processed | "
            f"recomputed | compactions L1/L2/L3/emergency | "
            f"{' | '.join(names[k] for k in keys)} | "
            "engine ms, compacting calls: CPU mean / p95 (wall mean / p95) "
            "[CPU less GC pauses] |",
            "|---|---:|---:|---:|---:|---:|---|" + "---:|" * len(keys) + "---:|"]
