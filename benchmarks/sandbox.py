"""What the command sandbox costs: the bwrap trial run at start-up, and the time one
`run_command` call takes with and without bubblewrap (a command that does nothing, so
the figure is the harness's and bwrap's own overhead).

    python benchmarks/sandbox.py                # print the figures
    python benchmarks/sandbox.py --write-docs   # also update the "Command sandbox"
                                                # section of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swival.messages import ToolCall  # noqa: E402
from swival.tools.base import ToolContext  # noqa: E402
from swival.tools.core import core_tools  # noqa: E402
from swival.tools.registry import ToolRegistry  # noqa: E402
from swival.tools.sandbox import Sandbox, SandboxConfig, probe  # noqa: E402

START, END = "<!-- sandbox:start -->", "<!-- sandbox:end -->"


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def command_ms(sandbox: Sandbox, runs: int) -> float:
    """Median wall time of one `run_command` call running `true`."""
    registry = ToolRegistry(core_tools())
    with tempfile.TemporaryDirectory(prefix="swival-bench-") as root:
        ctx = ToolContext(root=Path(root), sandbox=sandbox)

        def once() -> None:
            registry.reset()  # the repeated-call guard would refuse the third identical call
            result = registry.run(ToolCall("c", "run_command", {"command": "true"}), ctx)
            assert result.content == "[exit code 0]", result.content

        return median_ms(once, runs)


def measure(runs: int) -> list[str]:
    sandboxed = Sandbox(SandboxConfig(mode="on"))
    if not sandboxed.active:
        return [f"No working bubblewrap here ({sandboxed.problem}); nothing to measure."]
    bwrap = sandboxed.bwrap or "bwrap"
    trial = median_ms(lambda: probe.__wrapped__(bwrap, False), runs)
    plain = command_ms(Sandbox(), runs)
    boxed = command_ms(sandboxed, runs)
    return [
        f"Measured by `python benchmarks/sandbox.py --write-docs` ({runs} runs each, median; "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}).",
        "",
        "| what | ms |",
        "|---|---:|",
        f"| bwrap trial run at start-up (once per process) | {trial:.1f} |",
        f"| `run_command` running `true`, not sandboxed | {plain:.1f} |",
        f"| `run_command` running `true`, sandboxed | {boxed:.1f} |",
    ]


def write_docs(lines: list[str]) -> None:
    path = ROOT / "docs" / "benchmarks.md"
    text = path.read_text(encoding="utf-8")
    block = "\n".join([START, *lines, END])
    if START in text:
        head, rest = text.split(START, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## Command sandbox\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    lines = measure(args.runs)
    print("\n".join(lines))
    if args.write_docs:
        write_docs(lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
