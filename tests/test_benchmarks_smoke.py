"""The benchmarks keep working: a short replay and the start-up investigation run end to
end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAJECTORIES = ROOT.parent / "shared" / "data" / "trajectories"
SHORT = "sweagent__gpt4-fc__swe-agent-test-repo-1c2844.jsonl"


@pytest.mark.skipif(not (TRAJECTORIES / SHORT).is_file(), reason="../shared not beside the repo")
def test_replay_runs_on_a_short_trajectory(tmp_path: Path) -> None:
    shutil.copy(TRAJECTORIES / SHORT, tmp_path / SHORT)
    manifest = json.loads((TRAJECTORIES / "manifest.json").read_text(encoding="utf-8"))
    manifest["trajectories"] = [t for t in manifest["trajectories"] if t["file"] == SHORT]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "replay.py"), str(tmp_path),
         "--windows", "8192"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    engine_row = next(line for line in result.stdout.splitlines()
                      if line.startswith("| engine | 8K"))
    cells = [c.strip() for c in engine_row.strip("|").split("|")]
    assert cells[3] == "0", "no request over the window"


def test_startup_investigation_runs_whole_through_each_transport() -> None:
    from benchmarks.startup import STEPS, oneshot_runs

    runs = oneshot_runs(("lmstudio", "ollama"), 1)  # asserts all STEPS model calls were made
    assert STEPS == 15 and set(runs) == {"lmstudio", "ollama"}
    assert all(run.wall > 0 and run.cpu > 0 and run.rss_mb > 20 for (run,) in runs.values())


def test_sandbox_benchmark_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sandbox.py"), "--runs", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "| `run_command` running `true`, sandboxed |" in result.stdout \
        or "No working bubblewrap" in result.stdout
