"""Subagents through the installed `swival` against the loopback model server, with a
scripted model that tells the parent's requests (they offer `task`) from a subagent's:
the issue's case (a child reads a 40 KB file and reports one line; the parent's next
request holds the line and none of the file; at 8K both complete), what a person sees
of the child, and Ctrl-C in the REPL while a child runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from swival.agent import INTERRUPTED_RESULT
from tests.e2e import assert_valid_chat, request_text, run_swival, swival_command
from tests.fakeserver import FakeServer, Reply, estimate_tokens, text, tool

pytestmark = pytest.mark.timeout(120)
MARKER = "ERROR_CODE=7731 raised by the nightly import job"
SWIVAL = shutil.which("swival")
PROMPT = "›"


class Router:
    """Script items for a FakeServer: the parent's requests (their tools include `task`)
    are answered from `parent`, a subagent's from `child`; `seen` says whose each was."""

    def __init__(self, parent: list[Reply], child: list[Reply]) -> None:
        self.queues = {"parent": list(parent), "child": list(child)}
        self.seen: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        names = [t["function"]["name"] for t in body.get("tools") or []]
        who = "parent" if "task" in names else "child"
        self.seen.append(who)
        return self.queues[who].pop(0)

    def items(self) -> list[Any]:
        return [self] * sum(len(q) for q in self.queues.values())


def big_file(root: Path) -> None:
    """About 40 KB of log lines with MARKER on line 412."""
    lines = [f"2024-05-{n % 28 + 1:02d} row {n:04d}: import ok, 120 records, checksum "
             f"{n * 7919 % 100000:05d}" for n in range(1, 680)]
    lines[411] = f"2024-05-20 row 0412: {MARKER}"
    (root / "big.log").write_text("\n".join(lines) + "\n")
    assert 38_000 < (root / "big.log").stat().st_size < 44_000


def test_the_parent_pays_for_the_line_not_the_file(fake_server: Any, tmp_path: Path) -> None:
    big_file(tmp_path)
    router = Router(
        parent=[tool("task", description="find the error code",
                     prompt="Read big.log and report the line that holds ERROR_CODE."),
                text("The nightly import failed with error code 7731.")],
        child=[tool("read_file", file_path="big.log"),
               tool("grep", pattern="ERROR_CODE", path="big.log"),
               text(f"big.log:412: 2024-05-20 row 0412: {MARKER}")])
    server = fake_server(kind="llamacpp", window=8192)
    server.script(*router.items())
    done = run_swival(server, tmp_path, "-p", "Which error code does big.log report?",
                      "--max-output-tokens", "1024")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The nightly import failed with error code 7731."
    assert router.seen == ["parent", "child", "child", "child", "parent"]
    assert all(estimate_tokens(body) + 1024 <= 8192 for body in server.requests)
    child_read = request_text(server.requests[2])
    assert "row 0001: import ok" in child_read  # the child did read the file
    after = request_text(server.requests[4])
    assert MARKER in after
    assert "row 0001: import ok" not in after and "checksum" not in after
    assert len(after) < 4000  # the request, the call and the answer: no file in it
    result = server.requests[4]["messages"][-1]["content"]
    named = result.split("its whole conversation: ")[1].split("]")[0]
    assert named.startswith(".swival/sessions/") and named.endswith("-task1.jsonl")
    assert (tmp_path / named).is_file()
    shown = done.stderr
    assert "  ↳ subagent 1: find the error code" in shown
    assert "    • read_file big.log" in shown
    assert '    • grep "ERROR_CODE" in big.log — 1 match\n' in shown
    assert shown.index("↳ subagent 1") < shown.index("• task find the error code")


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
def test_ctrl_c_during_a_child_keeps_the_conversation_valid(fake_server: Any,
                                                            tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    (tmp_path / ".git").mkdir()
    (tmp_path / "notes.txt").write_text("owner: ada\n")
    router = Router(
        parent=[tool("task", description="survey the notes",
                     prompt="Read notes.txt and say who owns it."),
                text("Still here.")],
        child=[tool("read_file", file_path="notes.txt"), Reply(mode="hang", hang=30)])
    server: FakeServer = fake_server(kind="llamacpp", window=8192)
    server.script(*router.items())
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color"}
    child = pexpect.spawn(SWIVAL, ["--provider", "llamacpp", "--base-url", server.url],
                          cwd=str(tmp_path), env=env, encoding="utf-8", dimensions=(40, 120),
                          timeout=30)
    try:
        child.expect_exact(PROMPT)
        child.send("who owns the notes?\r")
        child.expect_exact("↳ subagent 1: survey the notes")
        deadline = time.monotonic() + 20
        while len(server.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # the child's second request: the one that hangs
        assert router.seen == ["parent", "child", "child"]
        child.send("\x03")
        child.expect_exact("    interrupted while waiting for the model")  # the child's step
        child.expect_exact("Interrupted.")
        child.expect_exact(PROMPT)
        child.send("are you there?\r")
        child.expect_exact("Still here.")
        child.expect_exact(PROMPT)
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    messages = server.requests[3]["messages"]
    assert_valid_chat(messages)
    answered = [m["content"] for m in messages if m["role"] == "tool"]
    assert answered == [INTERRUPTED_RESULT]
    saved = sorted((tmp_path / ".swival" / "sessions").glob("*-task1.jsonl"))
    assert len(saved) == 1
    records = [json.loads(line) for line in saved[0].read_text().splitlines()]
    kept = [r["message"] for r in records if r["type"] == "message"]
    assert_valid_chat(kept)  # the child's conversation was closed too
    assert kept[-1]["role"] == "tool" and "owner: ada" in kept[-1]["content"]


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
def test_the_person_sees_what_a_child_was_asked_and_that_it_asks(fake_server: Any,
                                                                  tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    (tmp_path / ".git").mkdir()
    router = Router(
        parent=[tool("task", description="make the marker",
                     prompt="Create the file made by running touch made in the project "
                            "root, then check that it exists and report that it does, with "
                            "nothing else said."),
                text("The marker is there.")],
        child=[tool("run_command", command="touch made"), text("made exists.")])
    server: FakeServer = fake_server(kind="llamacpp", window=8192)
    server.script(*router.items())
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "40"}
    child = pexpect.spawn(SWIVAL, ["--provider", "llamacpp", "--base-url", server.url,
                                   "--commands", "ask", "--subagent-tools", "run_command"],
                          cwd=str(tmp_path), env=env, encoding="utf-8", dimensions=(40, 200),
                          timeout=30)
    try:
        child.expect_exact(PROMPT)
        child.send("make the marker\r")
        # what it was asked, cut at a word with an ellipsis
        child.expect_exact("↳ subagent 1: make the marker — asked: Create the file made by "
                           "running touch made in the project root, then check that it "
                           "exists and report that it does, with…")
        child.expect_exact("Subagent 1 asks: run `touch made`?")
        child.expect_exact("[n]o:")
        child.send("y\r")
        child.expect(r"• run_command \S*touch made\S* — exit 0")  # styled: dim, bold
        child.expect_exact("The marker is there.")
        child.expect_exact(PROMPT)
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (tmp_path / "made").exists()


def test_sigterm_during_a_child_stops_both_and_keeps_them_valid(fake_server: Any,
                                                                tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("owner: ada\n")
    router = Router(parent=[tool("task", description="survey the notes",
                                 prompt="Read notes.txt and say who owns it.")],
                    child=[tool("read_file", file_path="notes.txt"),
                           Reply(mode="hang", hang=30)])
    server: FakeServer = fake_server(kind="llamacpp", window=8192)
    server.script(*router.items())
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / ".xdg"), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [*swival_command(), "--provider", "llamacpp", "--base-url", server.url, "--json",
         "-p", "who owns the notes?"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(server.requests) < 3:  # the child's second request, which hangs
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    report = json.loads(out)
    assert report["exit_reason"] == "interrupted" and report["subagents"]["tasks"] == 1
    assert report["subagents"]["failed"] == 1 and "Traceback" not in err
    for path in (tmp_path / ".swival" / "sessions").glob("*.jsonl"):  # parent and child
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert_valid_chat([r["message"] for r in records if r["type"] == "message"])
    assert len(list((tmp_path / ".swival" / "sessions").glob("*-task1.jsonl"))) == 1
