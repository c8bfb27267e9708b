"""Replay recorded agent runs through the context engine at 8K, 16K and 32K.

The recorded assistant messages stand in for the model; recorded tool outputs pass
through the tools' fixed caps (layer 1, reproduced by `fixed_caps`) and then the
engine's own window-scaled caps; recaps come from a deterministic stand-in. Two
baselines run on the same data: drop-oldest truncation and compact-every-turn.

    python benchmarks/replay.py [TRAJECTORY_DIR] [--windows 8192,16384,32768] [--write-docs]

Reported per window and strategy: requests over the window, peak use, total prompt
tokens, prefill tokens (tokens after the prefix shared with the previous request,
at message granularity: what a local server re-processes), compactions per level,
and the share of final requests that still hold the task head, every key edited path
and the last error. Then the engine's own time per call on a full 32K history.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay_support import (  # noqa: E402
    SCHEMAS,
    Baseline,
    NullKnowledge,
    NullScope,
    fixed_caps,
    null_collapse,
    stand_in_summary,
)

from swival.context.budget import Budget  # noqa: E402
from swival.context.engine import ContextEngine, ContextSettings, Extras  # noqa: E402
from swival.context.tokens import TokenCounter  # noqa: E402
from swival.messages import Message, ToolCall, ToolResult  # noqa: E402

READ_ONLY = {"read_file", "list_files", "grep", "think"}
WINDOWS = (8192, 16384, 32768)


@dataclass
class Run:
    """Measurements of one trajectory at one window with one strategy."""

    requests: int = 0
    over: int = 0
    peak: float = 0.0
    prompt_tokens: int = 0
    prefill_tokens: int = 0
    levels: dict[int, int] = field(default_factory=dict)
    facts: dict[str, bool] = field(default_factory=dict)
    engine_seconds: list[float] = field(default_factory=list)


def load(directory: Path) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for entry in manifest["trajectories"]:
        lines = (directory / entry["file"]).read_text(encoding="utf-8").splitlines()
        out.append((entry, [json.loads(line) for line in lines if line.strip()]))
    return out


def _meta(call: ToolCall, content: str) -> dict[str, Any]:
    """What our tools would report for this recorded call."""
    args = call.arguments
    kind = {"read_file": "file", "grep": "matches", "list_files": "listing",
            "run_command": "command"}.get(call.name, "command" if "command" in args else "generic")
    meta: dict[str, Any] = {"kind": kind}
    if args.get("path"):
        meta["path"] = str(args["path"])
    paths = [str(p) for p in args.get("paths") or ()] or ([meta["path"]] if "path" in meta else [])
    changed = paths if call.name in ("edit_file", "write_file") else []
    changed += [str(p) for p in args.get("modifies") or ()]
    if changed:
        meta["changed"] = [[p, "modified"] for p in dict.fromkeys(changed)]
    if kind == "file":
        meta["lines"] = content.count("\n") + 1
    return meta


def _shared_prefix(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def replay_one(messages: list[dict[str, Any]], strategy: Any, counter: TokenCounter,
               window: int) -> tuple[Run, list[Message]]:
    """Push one trajectory through `strategy`; return measurements and the final request."""
    run = Run()
    previous: list[dict[str, Any]] = []
    final: list[Message] = []
    calls: dict[str, ToolCall] = {}
    turn = 0
    pending = 0.0  # engine time since the last request
    body = [m for m in messages if m["role"] != "system"]
    for index, raw in enumerate(body):
        role = raw["role"]
        started = time.perf_counter()
        if role == "user":
            strategy.add_user(raw["content"])
        elif role == "assistant":
            turn += 1
            prepared = strategy.prepare(turn)
            run.engine_seconds.append(pending + time.perf_counter() - started)
            pending = 0.0
            for event in prepared.events:
                run.levels[event.level] = run.levels.get(event.level, 0) + 1
            wire = [m.to_dict() for m in prepared.messages]
            tokens = counter.messages(prepared.messages) + counter.schemas(SCHEMAS)
            run.requests += 1
            run.over += tokens > window
            run.peak = max(run.peak, tokens / window)
            run.prompt_tokens += tokens
            shared = _shared_prefix(previous, wire)
            # Tool schemas sit before the messages in chat templates: part of the prefix.
            run.prefill_tokens += sum(counter.message(m) for m in prepared.messages[shared:])
            previous, final = wire, list(prepared.messages)
            message = Message.from_dict(raw)
            calls.update({c.id: c for c in message.tool_calls})
            strategy.add_assistant(message)
        elif role == "tool":
            call = calls.get(raw.get("tool_call_id") or "") or ToolCall(
                id=raw.get("tool_call_id") or f"x{index}", name=raw.get("name") or "tool")
            content = fixed_caps(call.name, raw["content"])
            result = ToolResult(content, meta=_meta(call, content))
            strategy.add_tool_result(call, result, read_only=call.name in READ_ONLY)
            if index + 1 >= len(body) or body[index + 1]["role"] != "tool":
                for event in strategy.after_tool_batch(turn):
                    run.levels[event.level] = run.levels.get(event.level, 0) + 1
        pending += time.perf_counter() - started
    return run, final


def survival(entry: dict[str, Any], final: list[Message]) -> dict[str, bool]:
    text = "\n".join(m.content for m in final)
    facts = entry["facts"]
    out = {}
    head = " ".join((facts.get("task_statement_head") or "").split())[:120]
    flat = " ".join(text.split())
    out["task"] = bool(head) and head in flat
    keys = facts.get("key_edited_paths") or []
    out["paths"] = all(p in text for p in keys)
    error = facts.get("last_error_before_final_edit")
    if error:
        out["error"] = error["line"].strip()[:100] in text
    return out


def make_engine(system: str, window: int, counter: TokenCounter, state: Path) -> ContextEngine:
    # A fixed session id (and, in run_all, a relative state directory) keeps the paths
    # that recaps name, and so every token count, the same from run to run.
    return ContextEngine(
        ContextSettings(window=window), system, SCHEMAS, knowledge=NullKnowledge(),
        state_dir=state, summarize=stand_in_summary,
        extras=Extras(counter=counter, scope=NullScope(), collapse=null_collapse,
                      session_id="replay"),
    )


Factory = Callable[[str, int, TokenCounter, Path], Any]


def strategies() -> dict[str, Factory]:
    return {
        "engine": make_engine,
        "drop-oldest": lambda s, w, c, p: Baseline(s, w, c, "drop"),
        "compact-every-turn": lambda s, w, c, p: Baseline(s, w, c, "every"),
    }


def run_all(directory: Path, windows: Sequence[int]) -> dict[tuple[str, int], list[Run]]:
    counter = TokenCounter()
    data = load(directory)
    results: dict[tuple[str, int], list[Run]] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        for name, factory in strategies().items():
            for window in windows:
                runs = []
                for entry, messages in data:
                    system = next((m["content"] for m in messages if m["role"] == "system"), "")
                    strategy = factory(system, window, counter,
                                       Path(name) / str(window) / entry["id"])
                    run, final = replay_one(messages, strategy, counter, window)
                    run.facts = survival(entry, final)
                    runs.append(run)
                results[(name, window)] = runs
    return results


def time_full_history(counter: TokenCounter, calls: int = 200) -> float:
    """Median ms of prepare() on a 32K engine holding a history just under its trigger."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine("You are a coding agent.", 32768, counter, Path(tmp))
        return _time_prepare(engine, calls)


def _time_prepare(engine: ContextEngine, calls: int) -> float:
    engine.add_user("a long task")
    budget = Budget(32768, 32768, 0.85, 0.6)
    n = 0
    while engine.estimate() < budget.trigger - 600:
        n += 1
        call = ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"f{n}.py"})
        engine.add_assistant(Message(role="assistant", content=f"reading f{n}", tool_calls=(call,)))
        text = "\n".join(f"x_{n}_{i} = compute({i}, {n})" for i in range(30))
        engine.add_tool_result(call, ToolResult(text, meta={"kind": "file"}), read_only=True)
    samples = []
    for turn in range(calls):
        started = time.perf_counter()
        engine.prepare(turn)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def table(results: dict[tuple[str, int], list[Run]], timing_ms: float) -> str:
    rows = ["| strategy | window | requests | over window | peak use | prompt tokens | "
            "prefill tokens | compactions L1/L2/L3 | task kept | key paths kept | "
            "last error kept | engine ms/request (median) |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for (name, window), runs in results.items():
        def share(key: str, runs: list[Run] = runs) -> str:
            have = [r.facts[key] for r in runs if key in r.facts]
            return f"{sum(have)}/{len(have)}"
        levels = "/".join(str(sum(r.levels.get(lv, 0) for r in runs)) for lv in (1, 2, 3))
        seconds = [s for r in runs for s in r.engine_seconds]
        rows.append(
            f"| {name} | {window // 1024}K | {sum(r.requests for r in runs)} | "
            f"{sum(r.over for r in runs)} | {max(r.peak for r in runs):.0%} | "
            f"{sum(r.prompt_tokens for r in runs):,} | {sum(r.prefill_tokens for r in runs):,} | "
            f"{levels if name == 'engine' else '-'} | {share('task')} | {share('paths')} | "
            f"{share('error')} | {statistics.median(seconds) * 1000:.2f} |")
    rows.append("")
    rows.append(f"Engine prepare() on a full 32K history (just under the trigger): "
                f"median {timing_ms:.2f} ms per call.")
    return "\n".join(rows)


def write_docs(text: str, command: str) -> None:
    path = ROOT / "docs" / "benchmarks.md"
    current = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    section = (
        "## Replay\n\n<!-- replay:start -->\n"
        f"Reproduce with `{command}` (36 recorded runs, see "
        "`../shared/data/trajectories/README.md`).\n\n" + text + "\n<!-- replay:end -->\n"
    )
    pattern = re.compile(r"## Replay\n\n<!-- replay:start -->.*?<!-- replay:end -->\n", re.S)
    if pattern.search(current):
        current = pattern.sub(lambda _: section, current)
    else:
        current = current.rstrip("\n") + "\n\n" + section
    path.write_text(current, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("directory", nargs="?", type=Path,
                        default=ROOT.parent / "shared" / "data" / "trajectories")
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    if not (args.directory / "manifest.json").is_file():
        print(f"no manifest.json in {args.directory}; pass the trajectory directory",
              file=sys.stderr)
        return 2
    windows = [int(w) for w in args.windows.split(",")]
    started = time.perf_counter()
    results = run_all(args.directory, windows)
    text = table(results, time_full_history(TokenCounter()))
    print(text)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    if args.write_docs:
        write_docs(text, "python benchmarks/replay.py --write-docs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
