"""The installed `swival`, one-shot, at a 4K window against a server that counts
prompts the way llama.cpp does (tests/countingserver.py): results far larger than the
whole window (a 2 MB file, a 5 MB command output, binary output, a minified file of one
long line), every request inside the window with its reply, the task, the edited path
and the last error in every request after them, and no compaction that grows the
prompt."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.countingserver import CountingServer
from tests.e2e import assert_valid_chat, request_text, run_swival
from tests.fakeserver import text, tool

TASK = "look into the big files XYZZY"


def big_project(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"row {i:07d} " + "x" * 60 + "\n"
                                          for i in range(30_000)))  # 2 MB
    (root / "min.js").write_text("var a=" + ",".join(f"f{i}=function(){{return {i}}}"
                                                    for i in range(40_000)) + ";\n")
    (root / "bin.dat").write_bytes(os.urandom(200_000))


STEPS = [
    tool("read_file", file_path="big.txt"),
    tool("run_command", command="seq 1 900000"),  # 5.7 MB
    tool("run_command", command="head -c 300000 bin.dat"),
    tool("read_file", file_path="min.js"),
    tool("read_file", file_path="bin.dat"),
    tool("write_file", file_path="out.txt", content="hello\n" * 10),
    tool("run_command", command="echo Traceback; echo 'ValueError: bad thing QQQ'; exit 1"),
    tool("read_file", file_path="big.txt", offset=5000),
    tool("read_file", file_path="min.js"),
    text("Finished."),
]


def test_results_larger_than_a_4k_window(tmp_path: Path) -> None:
    big_project(tmp_path)
    server = CountingServer(kind="llamacpp", window=4096, marker=TASK).start()
    try:
        server.script(*STEPS)
        result = run_swival(server, tmp_path, "--yolo", "--json", "-p", TASK)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["answer"] == "Finished." and report["tool_calls"] == 9
    asked = [body for body in server.requests if body.get("tools")]
    assert len(asked) == len(server.seen) == 10
    for seen, body in zip(server.seen, asked, strict=True):
        assert seen.total + body["max_tokens"] <= 4096, (seen.total, body["max_tokens"])
        assert seen.marker_kept, "the task is in every request"
        assert_valid_chat(body["messages"])
    after_write = [request_text(body) for body in asked[7:]]
    assert all("out.txt" in sent for sent in after_write), "the edited path survives"
    assert all("QQQ" in sent for sent in after_write[1:]), "the last error survives"
    assert report["compactions"], "4K cannot hold these results without compaction"
    for event in report["compactions"]:
        assert event["tokens_after"] < event["tokens_before"], event
