"""MCP benchmark: what the schema budget does with real servers, and what servers cost at
start-up.

Measures, on this machine, with the test servers of tests/mcpserver.py (`basic`, 13
small tools; `many`, 60 tools with long descriptions):
1. the schema budget at 8K, 16K and 32K windows: each server's schema tokens whole and
   shortened (the context engine's counter), what the plan sends, and the total, over the
   built-in tools a default session sends (built by the session builder, `task` included);
2. REPL launch until the prompt is drawn (real pseudo-terminal, loopback model server),
   with no server and with two servers one of which takes 5 s to start;
3. Enter until the first request reaches the model server, with one server configured
   (the request waits for it: SDK import and server start);
4. `import mcp` alone, for reference.

    python benchmarks/mcp_budget.py                # print the tables
    python benchmarks/mcp_budget.py --write-docs   # also update the "MCP" section of
                                            # docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.startup import import_cost, load_average, repl_runs, row, write_docs  # noqa: E402
from swival.config import load_settings  # noqa: E402
from swival.context.budget import Budget  # noqa: E402
from swival.context.tokens import TokenCounter  # noqa: E402
from swival.mcp.budget import entries_for, make_plan  # noqa: E402
from swival.mcp.hub import Hub  # noqa: E402
from swival.mcp.spec import ServerSpec  # noqa: E402
from swival.mcp.tools import gateway_schemas  # noqa: E402
from swival.session import build_session  # noqa: E402
from swival.words import plural  # noqa: E402
from tests.fakeserver import FakeServer  # noqa: E402
from tests.mcpconfig import SERVER, table  # noqa: E402
from tests.scripted import ScriptedProvider  # noqa: E402

SECTION = "## MCP"
WINDOWS = (8192, 16_384, 32_768)
MODES = {"full": "whole", "short": "shortened", "held": "held back"}


def spec(name: str, kind: str) -> ServerSpec:
    return ServerSpec(name, command=sys.executable, args=(SERVER, kind))


def default_schemas() -> list[dict]:
    """The built-in tool schemas a default session sends (no MCP server configured): the
    session builder's own list, `task` and `fetch_url` included."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["XDG_STATE_HOME"] = str(Path(home) / "state")  # not the user's own
        os.environ["XDG_CONFIG_HOME"] = str(Path(home) / "config")
        root = Path(home) / "project"
        root.mkdir()
        session = build_session(load_settings({}, cwd=root), ScriptedProvider([]),
                                interactive=False)
        try:
            return session.agent.tools.schemas()
        finally:
            session.close()


def budget_rows() -> tuple[list[tuple[str, ...]], str]:
    """One row per window: the plan for `basic` and `many` (max_output_tokens 32768); and
    the start-up warning at 8K."""
    hub = Hub([spec("basic", "basic"), spec("many", "many")])
    hub.start()
    try:
        hub.settle()
        failed = {n: c.error for n, c in hub.connections.items() if c.state != "ready"}
        if failed:
            raise RuntimeError(f"test servers did not start: {failed}")
        taken: set[str] = set()
        servers = {name: entries_for(conn.tools, taken)
                   for name, conn in hub.connections.items()}
    finally:
        hub.close()
    count = TokenCounter().schemas
    base = count(default_schemas())
    rows, warning = [], ""
    for window in WINDOWS:
        budget = Budget(window, 32768, 0.85, 0.6).input_budget
        plan = make_plan(servers, base, budget, count, lambda held: count(gateway_schemas(held)))
        sent = "; ".join(f"{s.name} {MODES[s.mode]}" + (f" ({s.sent})" if s.sent else "")
                         for s in plan.servers)
        rows.append((f"{window // 1024}K", str(budget), str(base),
                     ", ".join(f"{s.name} {plural(s.tools, 'tool')} {s.full} → {s.short}"
                               for s in plan.servers),
                     f"{plan.whole} ({100 * plan.whole / budget:.0f}%)",
                     sent + (f"; mcp_list + mcp_call {plan.gateway}" if plan.gateway else ""),
                     f"{plan.total} ({100 * plan.total / budget:.0f}%)"))
        warning = warning or plan.warning() or ""
    return rows, warning


def table_for(name: str, kind: str) -> str:
    return table(name, kind, trust="true", env='{ SLOWSTART_SECONDS = "5" }')


def startup_rows(runs: int) -> list[tuple[str, ...]]:
    rows = []
    with FakeServer(kind="llamacpp", window=16_384) as server:
        none = repl_runs(server, runs)
        two = repl_runs(server, runs, table_for("basic", "basic") + table_for("late",
                                                                             "slowstart"))
        one = repl_runs(server, runs, table_for("basic", "basic"))
    rows.append(row("REPL: launch until the prompt, no MCP server", none[0], "≤ 0.5 s"))
    rows.append(row("REPL: launch until the prompt, two servers (one takes 5 s to start)",
                    two[0], "≤ 0.5 s"))
    rows.append(row("REPL: Enter until the first request, no MCP server", none[1], ""))
    rows.append(row("REPL: Enter until the first request, one server (it waits for the "
                    "server: SDK import, server start, tool listing)", one[1], ""))
    cost = [import_cost("mcp") for _ in range(max(1, runs // 2))]
    rows.append(row("`import mcp` alone (reference)", cost, ""))
    return rows


def markdown(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


BUDGET_HEADERS = ("window", "input budget", "built-in tools", "MCP schemas whole → shortened",
                  "all whole", "sent", "total sent")
STARTUP_HEADERS = ("measure", "wall (median)", "CPU user+sys (median)", "target")


def section(budget: list[tuple[str, ...]], warning: str, startup: list[tuple[str, ...]],
            load: str) -> str:
    return (
        f"{SECTION}\n\n"
        f"Measured by `python benchmarks/mcp_budget.py --write-docs` on this machine "
        f"({os.cpu_count()} cores, Python {sys.version.split()[0]}; load average {load} when "
        "it started), with the test servers of `tests/mcpserver.py`: `basic` (13 small tools) "
        "and `many` (60 tools with long descriptions). Token figures are the context "
        "engine's counter.\n\n"
        "Schema budget (what `docs/context-management.md#mcp-schema-budget` describes):\n\n"
        + markdown(BUDGET_HEADERS, budget) + "\n\n"
        f"The warning at 8K:\n\n```\n{warning}\n```\n\n"
        "Start-up (real pseudo-terminal, loopback model server that answers at once):\n\n"
        + markdown(STARTUP_HEADERS, startup) + "\n\n"
        "What the rows measure. The REPL starts MCP servers only once its prompt is drawn, "
        "so the prompt costs the same CPU with servers as without; a server that takes 5 s "
        "to start changes nothing there. The first request does wait: for the SDK's import "
        "(the `import mcp` row) on Swival's background thread, for each server process to "
        "start (it imports the SDK too) and list its tools. CPU counts Swival's process "
        "only; wall times grow with whatever else the machine runs.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="launches per row")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    load = load_average()
    budget, warning = budget_rows()
    print(markdown(BUDGET_HEADERS, budget))
    print(warning)
    startup = startup_rows(args.runs)
    print(markdown(STARTUP_HEADERS, startup))
    if args.write_docs:
        print(f"wrote {write_docs(section(budget, warning, startup, load), SECTION)}")


if __name__ == "__main__":
    main()
