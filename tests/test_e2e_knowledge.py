"""Issue "think, todo and snapshot" through the installed CLI at 8K: a checkpoint, three
reads, a restore with a summary, more reading — no overflow, smaller requests afterwards,
and the summary in every later request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e import assert_valid_chat, request_text, run_swival
from tests.fakeserver import text, tool

SUMMARY = "FINDINGS-7Q: parse() in a.py calls b.validate(); c.py holds the constants."


def test_snapshot_restore_frees_context_and_the_summary_stays(fake_server: Any,
                                                              tmp_path: Path) -> None:
    # Sized so that no prompt, as the fake server counts it, lands just under 4096 tokens:
    # a figure pinned under a power of two reads as a silent cut (context/calibration.py).
    for name in "abcd":
        (tmp_path / f"{name}.py").write_text("".join(
            f"def {name}_helper_{i}(x):\n    return x + {i}\n\n" for i in range(55)))
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("snapshot", action="save", label="investigate"),
        tool("read_file", file_path="a.py"),
        tool("read_file", file_path="b.py"),
        tool("read_file", file_path="c.py"),
        tool("snapshot", action="restore", summary=SUMMARY),
        tool("think", thought="Next I need d.py to finish the picture."),
        tool("read_file", file_path="d.py"),
        tool("todo", action="add", text="write the report"),
        text("Investigation done."),
    )
    result = run_swival(server, tmp_path, "--json", "-p", "investigate the helpers")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"] == "Investigation done."
    assert [c["level"] for c in report["compactions"]] == [0], "only the snapshot collapse"
    sizes = [len(request_text(body)) for body in server.requests]
    restore_at = 5  # requests[5] is the first one sent after the restore call
    assert max(sizes[restore_at:]) < sizes[restore_at - 1]
    for body in server.requests[restore_at:]:
        assert SUMMARY in request_text(body)
        assert "investigate the helpers" in request_text(body)
        assert_valid_chat(body["messages"])
    assert report["compactions"][0]["tokens_after"] < report["compactions"][0]["tokens_before"]
