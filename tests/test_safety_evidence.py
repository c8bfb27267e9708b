"""The safety evidence script counts what the tests record, and every test file it runs
still records attempts (a renamed or emptied file would silently shrink the figures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.safety_evidence import ROOT, TESTS, table
from tests.evidence import record


def test_record_writes_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "evidence.jsonl"
    monkeypatch.delenv("SWIVAL_EVIDENCE", raising=False)
    record("hang", "quiet", "in-process", hung=False)
    assert not target.exists()
    monkeypatch.setenv("SWIVAL_EVIDENCE", str(target))
    record("hang", "a FIFO", "swival", hung=False, traceback=False)
    row = json.loads(target.read_text())
    assert row == {"kind": "hang", "case": "a FIFO", "via": "swival", "escaped": None,
                   "secrets": None, "hung": False, "traceback": False}


def test_table_sums_what_was_measured_and_flags_any_failure() -> None:
    def row(kind: str, via: str, **seen: object) -> dict[str, object]:
        return {"kind": kind, "case": "c", "via": via, "escaped": None, "secrets": None,
                "hung": None, "traceback": None, **seen}

    rows = [row("path escape", "swival", escaped=False, traceback=False),
            row("path escape", "in-process", escaped=False),
            row("secret leak", "swival", secrets=0)]
    text, clean = table(rows)
    assert "| path escape | 2 | 1 | 1 | 0 | — | — | 0 |" in text
    assert "| secret leak | 1 | 1 | 0 | — | 0 | — | — |" in text
    assert "| hang | 0 | 0 | 0 | — | — | — | — |" in text and clean
    _, clean = table([*rows, row("path escape", "swival", escaped=True)])
    assert not clean
    _, clean = table([row("secret leak", "swival", secrets=2)])
    assert not clean


@pytest.mark.parametrize("name", TESTS)
def test_every_listed_test_file_records_attempts(name: str) -> None:
    assert "record(" in (ROOT / name).read_text(encoding="utf-8"), name
