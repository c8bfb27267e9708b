"""Malformed model output against the installed `swival`: a session in which the model
makes every mistake below in turn ends with exit 0 and no traceback, and after each mistake
the next request shows the model what was wrong.

The loopback FakeServer plays the model. All cases share one session because every start of
`swival` costs seconds; the assertions name the case that failed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tests.e2e import assert_valid_chat, run_swival
from tests.evidence import Kind, record
from tests.fakeserver import Reply, text, tool

CATASTROPHIC_LINE = "a" * 40 + "b"  # (a|aa)+$ backtracks on it for longer than anyone waits

# (model reply, words the tool result must hold: "error:" for a refusal)
CASES: dict[str, tuple[Reply, tuple[str, ...]]] = {
    "surrogate in write_file content": (
        tool("write_file", file_path="new.txt", content="half \ud83d of an emoji"),
        ("error:", "lone surrogate", "\\ud83d", "not run")),
    "read_file on a FIFO": (
        tool("read_file", file_path="pipe"), ("error:", "named pipe (FIFO)", "regular files")),
    "grep on a FIFO": (
        tool("grep", pattern="x", path="pipe"), ("error:", "named pipe (FIFO)")),
    "grep over a directory holding a FIFO": (
        tool("grep", pattern="alpha"), ("a.txt:1: alpha", "1 special file")),
    "catastrophic regex": (
        tool("grep", pattern="(a|aa)+$", path="slow.txt"),
        ("error:", "(a|aa)+$", "backtracks catastrophically", "simpler pattern")),
    "nested repeats that would exhaust memory": (
        tool("grep", pattern="((((((a{10}){10}){10}){10}){10}){10})"),
        ("error:", "too large", "smaller")),
    "thousands of unclosed brackets": (
        Reply(tool_calls=(("read_file", "[" * 5000),)), ("error:", "not valid JSON")),
    "a number with thousands of digits": (
        Reply(tool_calls=(("read_file", '{"file_path": "a.txt", "offset": 1' + "0" * 5000
                           + "}"),)),
        ("error:", "too many digits")),
    "number that is not finite": (
        Reply(tool_calls=(("read_file", '{"file_path": "a.txt", "offset": NaN}'),)),
        ("error:", "`offset` is nan", "finite")),
}


HANGS = ("read_file on a FIFO", "grep on a FIFO", "grep over a directory holding a FIFO",
         "catastrophic regex", "nested repeats that would exhaust memory")


def kind(case: str) -> Kind:
    """The attack class a case counts under in the safety evidence."""
    return "hang" if case in HANGS else "malformed output"


def test_malformed_output_is_answered_not_fatal(fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "slow.txt").write_text(CATASTROPHIC_LINE + "\n")
    os.mkfifo(tmp_path / "pipe")
    replies = [reply for reply, _ in CASES.values()]
    server = fake_server(kind="llamacpp").script(*replies, text("understood"))
    try:
        result = run_swival(server, tmp_path, "-p", "go", timeout=120)
    except subprocess.TimeoutExpired:
        for case in CASES:
            record(kind(case), case, "swival", hung=True)
        raise
    for case in CASES:
        record(kind(case), case, "swival", hung=False,
               traceback="Traceback" in result.stderr)
    assert (result.returncode, result.stdout) == (0, "understood\n"), result.stderr
    assert "Traceback" not in result.stderr
    assert len(server.requests) == len(CASES) + 1, result.stderr
    for number, (case, (_, expected)) in enumerate(CASES.items(), 1):
        told = server.requests[number]["messages"][-1]
        assert told["role"] == "tool", (case, told)
        content = told["content"]
        assert content.startswith("error:") == ("error:" in expected), (case, content)
        for words in expected:
            assert words in content, (case, content)
    assert_valid_chat(server.requests[-1]["messages"])
    assert not (tmp_path / "new.txt").exists()
