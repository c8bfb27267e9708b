"""Replay recorded agent runs, and the two scripted sessions, through the real agent at
8K, 16K and 32K.

    python benchmarks/replay.py [DIR] [--windows 8192,16384,32768] [--write-docs]

DIR holds the recorded runs (`manifest.json` and one JSONL file per run, in the
neutral trajectory format); by default benchmarks/trajectories, the 36 runs kept in
the repository (see its README.md). Without recorded runs only the scripted sessions
run. Each run is replayed by `Agent.run_turn` with Swival's real system prompt, tool
schemas, tool registry and context engine; the model is benchmarks/replay_model.py,
which answers every request with the next recorded assistant message and stages the
recorded outputs so that the real tools produce them. The scripted sessions of
benchmarks/scenarios.py run the same way over their generated project. What is
measured is in benchmarks/replay_measure.py. Every run works in its own folder under
a scratch directory made for this invocation and removed after it; nothing the model
sees names that directory, so the figures do not depend on where it is. `--write-docs`
puts the tables and the check against issue 12's goals into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay_compare import compare  # noqa: E402
from replay_goals import goals  # noqa: E402
from replay_measure import Meter, Run, Variant, build_agent, header, p95, row, text_of  # noqa: E402
from replay_model import Recorded, ReplayModel, ScriptModel  # noqa: E402
from scenarios import SCENARIOS, Scenario, workspace  # noqa: E402

from swival.context.tokens import TokenCounter  # noqa: E402
from swival.events import Compacted  # noqa: E402
from swival.messages import Message, ToolCall, ToolResult  # noqa: E402

WINDOWS = (8192, 16384, 32768)
RECORDED = Path(__file__).resolve().parent / "trajectories"
KEYS = ("task", "paths", "error")
RunData = tuple[dict[str, Any], list[dict[str, Any]]]  # a run's manifest entry, messages


@dataclass(frozen=True)
class Bench:
    """What every run shares: this invocation's scratch directory (each run works in a
    fresh folder of it), the counter the meters use, and how the engine decides."""

    scratch: Path
    counter: TokenCounter
    variant: Variant = Variant()

    def fresh(self, *parts: str) -> Path:
        folder = self.scratch.joinpath(*parts)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder


def load(directory: Path) -> list[RunData]:
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for entry in manifest["trajectories"]:
        lines = (directory / entry["file"]).read_text(encoding="utf-8").splitlines()
        out.append((entry, [json.loads(line) for line in lines if line.strip()]))
    return out


def requests_of(messages: list[dict[str, Any]]) -> list[tuple[str, list[Recorded]]]:
    """The run as user requests, each with its recorded replies and their outputs. The
    recorded agent's own scaffolding is replaced by Swival's, as its system prompt is:
    of the user messages before the first reply (SWE-agent's in-context demonstration,
    then the task) only the last is the request. Later user messages in a row are one
    request."""
    outputs = {m.get("tool_call_id"): m.get("content") or "" for m in messages
               if m["role"] == "tool"}
    out: list[tuple[str, list[Recorded]]] = []
    for message in messages:
        if message["role"] == "user":
            if out and not out[-1][1]:
                first = len(out) == 1  # before the first reply: the last one is the task
                text = message["content"] if first else out[-1][0] + "\n\n" + message["content"]
                out[-1] = (text, [])
            else:
                out.append((message["content"], []))
        elif message["role"] == "assistant" and out:
            ids = {c["id"]: outputs.get(c["id"], "") for c in message.get("tool_calls") or ()}
            out[-1][1].append((message, ids))
    return out


def survival(entry: dict[str, Any], final: Sequence[Message]) -> dict[str, bool]:
    """Which facts of the run the final request still holds (tool arguments count)."""
    text = text_of(final)
    flat = " ".join(text.split())
    facts = entry["facts"]
    head = " ".join((facts.get("task_statement_head") or "").split())[:120]
    out = {"task": bool(head) and head in flat,
           "paths": all(p in text for p in facts.get("key_edited_paths") or [])}
    error = facts.get("last_error_before_final_edit")
    if error:
        out["error"] = " ".join(error["line"].split())[:100] in flat
    return out


def replay_one(entry: dict[str, Any], messages: list[dict[str, Any]], window: int,
               bench: Bench) -> Run:
    """One recorded run through the agent at `window`."""
    root = bench.fresh(entry["id"], str(window))
    meter = Meter(bench.counter, window)
    model = ReplayModel(window, meter.tokens, root=root)
    agent, engine = build_agent(root, window, model, bench.variant)
    run = Run()
    for text, turns in requests_of(messages):
        model.start(turns)
        run.levels.update(e.level for e in agent.run_turn(text) if isinstance(e, Compacted))
    for seen in model.requests:
        meter.add(seen.request, seen.recap, run)
    final = [s.request for s in model.requests if not s.recap][-1]
    run.facts = survival(entry, final.messages)
    run.engine_ms = engine.compacting_ms
    shutil.rmtree(root, ignore_errors=True)
    return run


def scenario_run(scenario: Scenario, window: int, bench: Bench) -> Run:
    """One scripted session through the agent at `window`, over its generated project."""
    root = bench.fresh("scenario-" + scenario.name, str(window))
    workspace(root)
    meter = Meter(bench.counter, window)
    replies = [Message("assistant", s.say, tool_calls=(ToolCall(f"s{n}", s.tool, s.args),))
               for n, s in enumerate(scenario.steps)] + [Message("assistant", scenario.answer)]
    model = ScriptModel(window, meter.tokens, replies=replies)
    agent, engine = build_agent(root, window, model, bench.variant)
    run = Run()
    run.levels.update(e.level for e in agent.run_turn(scenario.task)
                      if isinstance(e, Compacted))
    for seen in model.requests:
        meter.add(seen.request, seen.recap, run)
    final = text_of([s.request for s in model.requests if not s.recap][-1].messages)
    run.facts = {"task": scenario.task[:120] in final}
    run.engine_ms = engine.compacting_ms
    shutil.rmtree(root, ignore_errors=True)
    return run


def full_history_timing(bench: Bench, trials: int = 30) -> list[tuple[float, float]]:
    """(wall, CPU) ms of the engine call that compacts a full 32K history: a history of
    file reads, command runs (some failing) and edits, filled until the engine
    compacts; `trials` times, each history a little different."""
    times = []
    for trial in range(trials):
        root = bench.fresh("full-32k", str(trial))
        model = ScriptModel(32768, lambda request: 0)
        _, engine = build_agent(root, 32768, model)
        engine.add_user(f"make the parser accept empty input ({trial})")
        n = 0
        while not engine.compacting_ms:
            n += 1
            _full_step(engine, n, trial)
        times.append(engine.compacting_ms[0])
        shutil.rmtree(root, ignore_errors=True)
    return times


def _full_step(engine: Any, n: int, trial: int) -> None:
    kind = ("file", "command", "file", "edit")[(n + trial) % 4]
    lines = 60 + (n * 7 + trial) % 50
    if kind == "file":
        call = ToolCall(f"c{n}", "read_file", {"file_path": f"src/m{n}.py"})
        body = "\n".join(f"{i:>4}\tdef step_{n}_{i}(x): return helper(x, {i}) + {trial}"
                         for i in range(lines))
        meta: dict[str, Any] = {"kind": "file", "path": f"src/m{n}.py", "lines": lines}
    elif kind == "command":
        call = ToolCall(f"c{n}", "run_command", {"command": f"pytest tests/t{n}.py"})
        body = "\n".join(f"tests/t{n}.py::test_{i} PASSED" for i in range(lines))
        body += f"\nE   AssertionError: {n} != {n + 1}\n1 failed, {lines} passed"
        meta = {"kind": "command", "exit_code": 1, "command": f"pytest tests/t{n}.py"}
    else:
        call = ToolCall(f"c{n}", "edit_file", {"file_path": f"src/m{n}.py",
                                               "old_string": "x" * 300, "new_string": "y" * 300})
        body, meta = f"Edited src/m{n}.py.", {"changed": [[f"src/m{n}.py", "modified"]]}
    engine.add_assistant(Message("assistant", f"step {n}", tool_calls=(call,)))
    engine.add_tool_result(call, ToolResult(body, meta=meta), read_only=kind == "file")
    engine.after_tool_batch(n)
    engine.prepare(n)


def measured(data: list[RunData], windows: Sequence[int], bench: Bench
             ) -> tuple[dict[int, list[Run]], dict[tuple[str, int], Run]]:
    """Every recorded run and every scripted session at every window."""
    replayed = {window: [replay_one(entry, messages, window, bench) for entry, messages in data]
                for window in windows} if data else {}
    scripted = {(scenario.name, window): scenario_run(scenario, window, bench)
                for scenario in SCENARIOS.values() for window in windows}
    return replayed, scripted


def tables(data: list[RunData], windows: Sequence[int], bench: Bench) -> str:
    """The table of recorded runs (none without `data`), the table of scripted
    sessions, the full-32K timing and the check against issue 12's goals."""
    replayed, scripted = measured(data, windows, bench)
    lines: list[str] = []
    if replayed:
        lines = header("window", KEYS)
        lines += [row(f"{window // 1024}K", runs, KEYS) for window, runs in replayed.items()]
        lines.append("")
    lines += header("scripted session", ("task",))
    lines += [row(f"{name} {window // 1024}K", [run], ("task",))
              for (name, window), run in scripted.items()]
    timed = full_history_timing(bench)
    cpu, wall = [t[1] for t in timed], [t[0] for t in timed]
    lines += ["", f"Engine call that compacts a full 32K history ({len(timed)} histories of "
              f"reads, test runs and edits): CPU median {statistics.median(cpu):.1f} ms, 95th "
              f"percentile {p95(cpu):.1f} ms (wall {statistics.median(wall):.1f} ms and "
              f"{p95(wall):.1f} ms).", "", *goals(replayed, scripted, cpu)]
    return "\n".join(lines)


def write_docs(marker: str, lead: str, text: str) -> None:
    """Put `text` (after `lead`) between the `marker` comments of docs/benchmarks.md."""
    path = ROOT / "docs" / "benchmarks.md"
    current = path.read_text(encoding="utf-8")
    section = f"<!-- {marker}:start -->\n{lead}\n\n{text}\n<!-- {marker}:end -->"
    pattern = re.compile(f"<!-- {marker}:start -->.*?<!-- {marker}:end -->", re.S)
    if not pattern.search(current):
        raise SystemExit(f"docs/benchmarks.md has no {marker} markers")
    path.write_text(pattern.sub(lambda _: section, current), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("directory", nargs="?", type=Path, default=RECORDED)
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    parser.add_argument("--compare", action="store_true",
                        help="weigh Swival's compaction choices against the alternatives")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    recorded = (args.directory / "manifest.json").is_file()
    if not recorded:
        if args.write_docs:
            print(f"{args.directory} holds no recorded runs (manifest.json); the docs table "
                  "needs them", file=sys.stderr)
            return 2
        print(f"{args.directory} holds no recorded runs (manifest.json): the scripted "
              "sessions only", file=sys.stderr)
    data = load(args.directory) if recorded else []
    windows = [int(w) for w in args.windows.split(",")]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="swival-replay-") as scratch:
        bench = Bench(Path(scratch), TokenCounter())
        if args.compare:
            text = compare(data, windows, lambda variant: measured(
                data, windows, replace(bench, variant=variant)))
        else:
            text = tables(data, windows, bench)
    print(text)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    if args.write_docs:
        command = "python benchmarks/replay.py" + (" --compare" if args.compare else "")
        lead = (f"Reproduce with `{command} --write-docs` ({len(data)} recorded runs from "
                "`benchmarks/trajectories`; see [the recorded runs](#the-recorded-runs)).")
        write_docs("replay-compare" if args.compare else "replay", lead, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
