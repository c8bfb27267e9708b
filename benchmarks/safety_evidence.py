"""Safety evidence for docs/safety.md: run the tests that attack Swival and count what they saw.

    python benchmarks/safety_evidence.py               # run the tests, print the table
    python benchmarks/safety_evidence.py --write-docs  # and put it into docs/safety.md

Every attack attempt in the tests below calls `tests/evidence.py`'s `record` with what it
observed. This script runs those tests with SWIVAL_EVIDENCE pointing at a scratch file and
counts the records per attack class, so the figures come from the same case lists the tests
use and cannot drift from them. It exits 1 — and writes nothing — when a test fails or
any escape, secret, hang or traceback was observed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.evidence import KINDS  # noqa: E402  (the repository root is on the path now)

TESTS = (
    "tests/test_faults.py",
    "tests/test_tools_workspace.py",
    "tests/test_state.py",
    "tests/test_e2e_state.py",
    "tests/test_tools_policy.py",
    "tests/test_policy_e2e.py",
    "tests/test_policy_git_config.py",
    "tests/test_sandbox.py",
    "tests/test_sandbox_e2e.py",
    "tests/test_trust.py",
    "tests/test_trust_e2e.py",
    "tests/test_providers_wire.py",
    "tests/test_providers_bodies.py",
    "tests/test_secrets_e2e.py",
    "tests/test_robust_e2e.py",
    "tests/test_robust_property.py",
    "tests/test_robust_tools.py",
)
FIELDS = (("escaped", "escapes"), ("secrets", "secrets found"), ("hung", "hangs"),
          ("traceback", "tracebacks"))
DOCS = ROOT / "docs" / "safety.md"
START, END = "<!-- evidence:start -->", "<!-- evidence:end -->"


def run_tests(records: Path) -> tuple[int, str]:
    """Run the safety tests; return pytest's exit code and its summary line."""
    env = {**os.environ, "SWIVAL_EVIDENCE": str(records)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    lines = [line.strip("= ") for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else done.stderr.strip()[-300:]
    return done.returncode, re.sub(r" in [\d.]+s.*$", "", summary)  # no timing: stable docs


def total(rows: Iterable[Mapping[str, Any]], field: str) -> str:
    """The sum of a measured field ("—" when no attempt of the class measured it)."""
    measured = [row[field] for row in rows if row[field] is not None]
    return f"{sum(int(v) for v in measured):,}" if measured else "—"


def table(rows: list[dict[str, Any]]) -> tuple[str, bool]:
    """The markdown table, and whether every measured figure is zero."""
    out = ["| attack class | attempts | through `swival` | in-process | "
           + " | ".join(name for _, name in FIELDS) + " |",
           "|---|---:|---:|---:|" + "---:|" * len(FIELDS)]
    clean = True
    for kind in KINDS:
        mine = [row for row in rows if row["kind"] == kind]
        cells = [total(mine, field) for field, _ in FIELDS]
        clean = clean and all(cell in ("0", "—") for cell in cells)
        swival = sum(row["via"] == "swival" for row in mine)
        out.append(f"| {kind} | {len(mine):,} | {swival:,} | {len(mine) - swival:,} | "
                   + " | ".join(cells) + " |")
    return "\n".join(out), clean


def write_docs(text: str) -> None:
    docs = DOCS.read_text(encoding="utf-8")
    block = f"{START}\n{text}\n{END}"
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    DOCS.write_text(pattern.sub(lambda _: block, docs), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-docs", action="store_true",
                        help="replace the table in docs/safety.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        records = Path(scratch) / "evidence.jsonl"
        records.touch()
        code, summary = run_tests(records)
        rows = [json.loads(line) for line in records.read_text().splitlines()]
    text, clean = table(rows)
    text += (f"\n\nProduced by `python benchmarks/safety_evidence.py` (pytest: {summary}).")
    print(text)
    if code != 0 or not clean:
        print("\nA test failed or an attack got through: nothing written.", file=sys.stderr)
        return 1
    if args.write_docs:
        write_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
