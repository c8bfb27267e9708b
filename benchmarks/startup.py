"""Start-up and harness-overhead benchmark.

Measures, on this machine:
1. launch-to-prompt: the installed `swival` in a real pseudo-terminal (pexpect) against the
   loopback fake server, from spawn until the REPL prompt is drawn (target: under 0.5 s);
2. `swival --help`: wall time, and that litellm was not imported;
3. the harness's own time per turn against an instant model: (a) in-process with the scripted
   provider (agent + context engine + tools, no HTTP), (b) through the real provider code
   (litellm included) to the loopback fake server. A turn is: read a file, grep, answer.

    python benchmarks/startup.py                # print the table
    python benchmarks/startup.py --write-docs   # also update the "Start-up" section of
                                                # docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServer, Reply  # noqa: E402
from tests.scripted import ScriptedProvider, call, reply  # noqa: E402

PROMPT = "›"  # the space after it is drawn as a cursor move
SECTION = "## Start-up"


def swival_command() -> list[str]:
    exe = shutil.which("swival")
    return [exe] if exe else [sys.executable, "-m", "swival"]


def make_project() -> Path:
    root = Path(tempfile.mkdtemp(prefix="swival-bench-"))
    (root / ".git").mkdir()
    (root / "app.py").write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(200)))
    return root


def launch_to_prompt(server_url: str, runs: int) -> list[float]:
    import pexpect

    root = make_project()
    env = {**os.environ, "HOME": str(root), "XDG_CONFIG_HOME": str(root / ".config"),
           "TERM": "xterm-256color", "NO_COLOR": "1"}
    times = []
    for _ in range(runs):
        cmd = swival_command()
        started = time.perf_counter()
        child = pexpect.spawn(cmd[0], [*cmd[1:], "--provider", "llamacpp", "--base-url",
                                       server_url], cwd=str(root), env=env, encoding="utf-8",
                              dimensions=(40, 120), timeout=20)
        child.expect_exact(PROMPT)
        times.append(time.perf_counter() - started)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    return times


def help_time(runs: int) -> tuple[list[float], bool]:
    cmd = swival_command()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([*cmd, "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    probe = ("import sys; from swival.cli import app\n"
             "try:\n    app(['--help'], prog_name='swival')\nexcept SystemExit:\n    pass\n"
             "print('LITELLM' if 'litellm' in sys.modules else 'CLEAN')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    return times, out.strip().endswith("CLEAN")


def turn_script() -> list[object]:
    return [call("read_file", file_path="app.py"), call("grep", pattern="return 1"),
            reply("Done.", usage=(900, 5))]


def in_process_turns(turns: int) -> list[float]:
    """Agent + context engine + real tools against an instant scripted model."""
    from tests.test_repl_logic import make_session

    root = make_project()
    provider = ScriptedProvider([], window=32_768)
    session = make_session(root, provider)
    return _time_turns(turns, lambda: provider.add(*turn_script()), session.agent.run_turn)


def loopback_turns(server: FakeServer, turns: int) -> list[float]:
    """The same turn through the real provider (litellm) to the loopback fake server."""
    from swival.config import load_settings
    from swival.session import open_session

    root = make_project()
    old = Path.cwd()
    os.chdir(root)
    try:
        settings = load_settings({"provider": "llamacpp", "base_url": server.url,
                                  "commands": "all"}, config_path=None)
        session = open_session(settings, interactive=False)

        def script() -> None:
            server.script(Reply(tool_calls=[("read_file", {"file_path": "app.py"})]),
                          Reply(tool_calls=[("grep", {"pattern": "return 1"})]),
                          Reply(text="Done."))

        server.script(Reply(text="warm"))
        list(session.agent.run_turn("warm the connection"))  # first call imports litellm
        return _time_turns(turns, script, session.agent.run_turn)
    finally:
        os.chdir(old)


def _time_turns(turns: int, script: Callable[[], None],
                run_turn: Callable[[str], object]) -> list[float]:
    times = []
    for i in range(turns):
        script()
        started = time.perf_counter()
        for _event in run_turn(f"request {i}"):  # type: ignore[attr-defined]
            pass
        times.append(time.perf_counter() - started)
    return times


def ms(values: list[float]) -> str:
    return (f"{1000 * statistics.median(values):.1f} ms (min {1000 * min(values):.1f}, "
            f"max {1000 * max(values):.1f}, n={len(values)})")


def measure(runs: int, turns: int) -> list[tuple[str, str]]:
    rows = []
    with FakeServer(kind="llamacpp", window=16_384) as server:
        rows.append(("launch to prompt (pty, loopback server)", ms(launch_to_prompt(server.url,
                                                                                   runs))))
        help_times, clean = help_time(runs)
        rows.append(("`swival --help`", ms(help_times)))
        rows.append(("`--help` imports litellm", "no" if clean else "YES (regression)"))
        per_turn = in_process_turns(turns)
        rows.append(("harness per turn, in-process (3 model calls, 2 tools)", ms(per_turn)))
        rows.append(("harness per turn, litellm + loopback HTTP (same turn)",
                     ms(loopback_turns(server, turns))))
    return rows


def table(rows: list[tuple[str, str]]) -> str:
    lines = ["| measure | median |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def section(rows: list[tuple[str, str]]) -> str:
    cpu = os.cpu_count()
    return (
        f"{SECTION}\n\n"
        f"Measured by `python benchmarks/startup.py --write-docs` on this machine ({cpu} cores, "
        f"Python {sys.version.split()[0]}). Target: the prompt within 0.5 s of launch; "
        "`--help` without litellm. litellm is imported in a background thread after the prompt "
        "is up, so it costs nothing at launch. The per-turn figures are the harness's own "
        "overhead: the model answers instantly.\n\n" + table(rows) + "\n"
    )


def write_docs(text: str) -> Path:
    """Replace (or append) the Start-up section, leaving every other section alone."""
    path = ROOT / "docs" / "benchmarks.md"
    current = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    start = current.find(SECTION + "\n")
    if start < 0:
        updated = current.rstrip("\n") + "\n\n" + text
    else:
        end = current.find("\n## ", start + len(SECTION))
        tail = current[end + 1:] if end >= 0 else ""
        updated = current[:start] + text + ("\n" + tail if tail else "")
    path.write_text(updated, encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="launches and --help runs")
    parser.add_argument("--turns", type=int, default=20, help="timed turns per harness mode")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = measure(args.runs, args.turns)
    print(table(rows))
    if args.write_docs:
        print(f"wrote {write_docs(section(rows))}")


if __name__ == "__main__":
    main()
