"""What scripts read: `--output-format stream-json` line by line, and one JSON object (or
one `result` line) for every failure, through the installed `swival`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swival.events import Event
from swival.records import EVENT_RECORDS
from tests.e2e import run_swival, swival_command
from tests.fakeserver import Reply, text, tool

RESULT_FIELDS = {"answer", "exit_reason", "exit_code", "error", "turns", "tool_calls", "tokens",
                 "compactions", "files_changed", "subagents", "provider", "base_url", "model",
                 "window", "window_source", "session_id", "ignored_project_keys", "cost_usd"}
PARTS = 5  # files read in the stream test: more than a 4K window holds


def test_every_event_type_has_a_row_in_the_stream_table() -> None:
    """A new event is streamed (or deliberately not) by adding its row to EVENT_RECORDS."""
    assert set(typing.get_args(Event)) == set(EVENT_RECORDS)


def model_with_a_story() -> Callable[[dict[str, Any]], Reply]:
    """Five reads (compaction at 4K follows), a reply the connection drops (asked
    again), a reply the output limit cuts (continued), then the end of the answer.
    Recap requests (sent without tools) get a recap."""
    story = [tool("read_file", file_path=f"part{i}.txt") for i in range(PARTS)] + [
        Reply(text="The parts", mode="die"),
        Reply(text="The parts", finish_reason="length"),
        text(" are read.")]
    calls: list[int] = []

    def model(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return text("A recap of the parts read so far.")
        calls.append(1)
        return story[len(calls) - 1]
    return model


def test_stream_json_line_by_line(fake_server: Any, tmp_path: Path) -> None:
    for i in range(PARTS):
        (tmp_path / f"part{i}.txt").write_text(f"part {i} line\n" * 300)
    server = fake_server(kind="llamacpp", window=4096).script(*[model_with_a_story()] * 12)
    result = run_swival(server, tmp_path, "--output-format", "stream-json",
                        "--max-output-tokens", "256", "-p", "read the parts")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    types = [line["type"] for line in lines]

    start = lines[0]
    assert start["type"] == "start" and start["model"] == "test-model"
    assert start["window"] == 4096 and start["window_source"] == "llama.cpp /props n_ctx"
    assert start["base_url"] == server.url and start["session_id"]
    assert lines[1]["type"] == "notice" and "window" in lines[1]["text"]  # 4K is tight
    calls = [i for i, kind in enumerate(types) if kind == "tool_call"]
    assert [lines[i]["arguments"] for i in calls] == [
        {"file_path": f"part{i}.txt"} for i in range(PARTS)]
    for i in calls:  # each result right after its call
        call, done = lines[i], lines[i + 1]
        assert (done["type"], done["id"], done["name"]) == ("tool_result", call["id"],
                                                            "read_file")
        # at 4K a 300-line part is cut to fit: the summary says what reached the model
        got = re.fullmatch(r"(\d+) of 300 lines, cut to fit; full text in \.swival/out/\S+"
                           r"/read_file-\d+\.txt", done["summary"])
        assert done["ok"] is True and got is not None and 0 < int(got[1]) < 300
    compactions = [line for line in lines if line["type"] == "compaction"]
    assert compactions and compactions[0]["tokens_after"] < compactions[0]["tokens_before"]
    assert types.index("compaction") > types.index("tool_result")
    retry = types.index("retry")
    continuation = types.index("continuation")
    assert retry < continuation and lines[continuation]["count"] == 1
    assert lines[continuation]["limit"] <= 256
    before = "".join(line["text"] for line in lines[:retry] if line["type"] == "text")
    after = "".join(line["text"] for line in lines[retry:] if line["type"] == "text")
    assert "The parts".startswith(before)  # the dropped reply, superseded by the retry
    assert after == "The parts are read."  # the continuation joined exactly as written

    final = lines[-1]
    assert types.count("result") == 1 and final["type"] == "result"
    assert set(final) == RESULT_FIELDS | {"type"}
    assert final["answer"] == after and final["exit_code"] == 0
    assert final["tool_calls"] == PARTS and len(final["compactions"]) == len(compactions)
    # the result's list holds what each compaction line said, the re-processing included
    assert final["compactions"] == [{k: v for k, v in line.items() if k != "type"}
                                    for line in compactions]


def test_stream_json_lines_arrive_while_the_run_goes_on(fake_server: Any,
                                                        tmp_path: Path) -> None:
    """Each line is flushed when it happens: the `start` line is read long before the
    slow reply ends (written into a pipe, unflushed lines would all come at exit)."""
    server = fake_server(kind="llamacpp").script(Reply(text="a slow answer", chunk=3,
                                                       delay=0.15))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / ".xdg"), "NO_COLOR": "1"}
    env.pop("PYTHONUNBUFFERED", None)  # as for a user: stdout into a pipe is buffered
    proc = subprocess.Popen(
        [*swival_command(), "--provider", "llamacpp", "--base-url", server.url,
         "--output-format", "stream-json", "-p", "go"], cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    arrived = [(json.loads(line)["type"], time.monotonic()) for line in proc.stdout]
    assert proc.wait(timeout=60) == 0
    assert arrived[0][0] == "start" and arrived[-1][0] == "result"
    assert arrived[-1][1] - arrived[0][1] > 0.4  # ~0.9 s of streaming in between


def test_output_format_overrides_json_from_the_config(fake_server: Any,
                                                     tmp_path: Path) -> None:
    (tmp_path / "swival.toml").write_text("json = true\n")
    server = fake_server(kind="llamacpp").script(text("Streamed."))
    streamed = run_swival(server, tmp_path, "--output-format", "stream-json", "-p", "hi")
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert [lines[0]["type"], lines[-1]["type"]] == ["start", "result"]
    assert lines[-1]["answer"] == "Streamed."


def failure(result: subprocess.CompletedProcess[str], code: int) -> dict[str, Any]:
    """The one JSON object a failed run printed, checked for the --json fields."""
    assert result.returncode == code, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    report = json.loads(lines[0])
    assert set(report) - {"type"} == RESULT_FIELDS
    assert report["exit_code"] == code and report["exit_reason"] == "error"
    assert report["answer"] == "" and report["turns"] == 0
    return report


FAILURES = {  # name -> (files, environment, arguments, stdin, what the error names)
    "bad swival.toml": ({"swival.toml": 'max_turns = "many"\n'}, {}, ("--json", "-p", "hi"),
                        None, "max_turns"),
    "bad SWIVAL_ variable": ({}, {"SWIVAL_MAX_TURNS": "abc"}, ("--json", "-p", "hi"), None,
                             "SWIVAL_MAX_TURNS"),
    "empty stdin": ({}, {}, ("--json",), "  \n", "No task"),
    "unknown flag": ({}, {}, ("--json", "--bogus", "-p", "hi"), None, "--bogus"),
    "bad flag value": ({}, {}, ("--json", "--max-turns", "x", "-p", "hi"), None,
                       "--max-turns"),
    "json = true in the broken file": ({"swival.toml": "json = true\nmax_turn = 3\n"}, {},
                                       ("-p", "hi"), None, "max_turns"),
    "output_format in the global file": (
        {".xdg/swival/config.toml": 'output_format = "json"\n'}, {"SWIVAL_QUIET": "maybe"},
        ("-p", "hi"), None, "SWIVAL_QUIET"),
}


@pytest.mark.parametrize("case", FAILURES.values(), ids=FAILURES.keys())
def test_config_and_usage_errors_print_one_object(tmp_path: Path, case: tuple[Any, ...]) -> None:
    files, env, args, stdin, expected = case
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    popen = {"input": stdin} if stdin is not None else {}
    result = run_swival(None, tmp_path, *args, env=env, **popen)
    report = failure(result, 2)
    assert expected in report["error"] and "type" not in report


def test_stream_json_failure_is_one_result_line(tmp_path: Path) -> None:
    (tmp_path / "swival.toml").write_text("compaction_trigger = 3.0\n")
    result = run_swival(None, tmp_path, "--output-format", "stream-json", "-p", "hi")
    report = failure(result, 2)
    assert report["type"] == "result" and "compaction_trigger" in report["error"]


def test_unreachable_server_object_names_the_resolved_url(tmp_path: Path) -> None:
    result = run_swival(None, tmp_path, "--provider", "llamacpp", "--base-url",
                        "127.0.0.1:9/v1", "--json", "-p", "hi")
    report = failure(result, 3)
    assert report["base_url"] == "http://127.0.0.1:9" and report["base_url"] in report["error"]
    assert report["provider"] == "llamacpp"


def test_text_errors_stay_text(tmp_path: Path) -> None:
    result = run_swival(None, tmp_path, "--bogus", "-p", "hi")
    assert result.returncode == 2 and result.stdout == ""
    assert "No such option: --bogus" in result.stderr


def test_a_subagents_steps_are_streamed_inside_its_task_call(fake_server: Any,
                                                             tmp_path: Path) -> None:
    """A subagent's steps reach the stream through the task tool, not the agent's events:
    they come between the parent's `task` call and its result."""
    (tmp_path / "notes.txt").write_text("the answer is 42\n")

    def model(body: dict[str, Any]) -> Reply:
        parent = "task" in [t["function"]["name"] for t in body.get("tools") or []]
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if parent:
            return text("It is 42.") if done else tool(
                "task", description="read the notes", prompt="What does notes.txt say?")
        return text("notes.txt says 42.") if done else tool("read_file", file_path="notes.txt")

    server = fake_server(kind="llamacpp", window=16384).script(*[model] * 4)
    result = run_swival(server, tmp_path, "--output-format", "stream-json", "-p", "ask")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [(line["type"], line.get("name")) for line in lines]
    call, done = kinds.index(("tool_call", "task")), kinds.index(("tool_result", "task"))
    steps = [line for line in lines[call:done] if line["type"] == "subagent"]
    assert steps and steps[0]["task"] == 1 and steps[0]["description"] == "read the notes"
    read = next(step for step in steps if step.get("name") == "read_file")
    assert read["ok"] is True and read["arguments"] == {"file_path": "notes.txt"}
    assert lines[-1]["answer"] == "It is 42." and lines[-1]["subagents"]["tasks"] == 1


def test_a_command_that_exits_1_is_not_ok(fake_server: Any, tmp_path: Path) -> None:
    """`ok` follows the screen's mark: a command that ran but exited with 1 is a failed
    call (✗ on stderr), one that exited with 0 is not."""
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="python3 -c 'raise SystemExit(1)'"),
        tool("run_command", command="python3 -c 'print(1)'"), text("Done."))
    result = run_swival(server, tmp_path, "--yolo", "--output-format", "stream-json",
                        "-p", "run them")
    assert result.returncode == 0, result.stderr
    done = [json.loads(line) for line in result.stdout.splitlines()
            if json.loads(line)["type"] == "tool_result"]
    assert [(d["ok"], d["summary"]) for d in done] == [(False, "exit 1"), (True, "exit 0")]


@pytest.mark.parametrize("flags", [("--json", "--output-format", "text"),
                                   ("--json", "--output-format", "stream-json"),
                                   ("--no-json", "--output-format", "json"),
                                   ("--no-json", "--output-format", "stream-json")])
def test_json_flags_that_disagree_are_a_usage_error(tmp_path: Path,
                                                    flags: tuple[str, ...]) -> None:
    result = run_swival(None, tmp_path, *flags, "-p", "hi")
    assert result.returncode == 2
    said = result.stderr if flags[-1] == "text" else json.loads(result.stdout)["error"]
    assert f"{flags[0]} and --output-format {flags[-1]} ask for different output" in said


def test_json_flags_that_agree_are_accepted(fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="llamacpp").script(text("Agreed."))
    result = run_swival(server, tmp_path, "--json", "--output-format", "json", "-p", "hi")
    assert result.returncode == 0 and json.loads(result.stdout)["answer"] == "Agreed."


@pytest.mark.parametrize(("fmt", "during"), [("stream-json", "command"), ("stream-json", "reply"),
                                             ("json", "command")])
def test_ctrl_c_still_ends_with_a_result_and_closes_every_call(
        fake_server: Any, tmp_path: Path, fmt: str, during: str) -> None:
    """SIGINT (Ctrl-C) mid-run: stdout stays valid JSON, every `tool_call` gets its
    `tool_result` (not ok, "interrupted") and the run ends with one result, exit 130."""
    started = tmp_path / "started"
    script = (tool("run_command", command=f"touch {started}; sleep 30"), text("never")) \
        if during == "command" else (Reply(text="slow", mode="hang", hang=30),)
    server = fake_server(kind="llamacpp").script(*script)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / ".xdg"), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [*swival_command(), "--provider", "llamacpp", "--base-url", server.url, "--yolo",
         "--sandbox", "off", "--output-format", fmt, "-p", "go"], cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (started.exists() if during == "command" else server.requests):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    records = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 130 and "Traceback" not in err, err
    result = records[-1]
    assert result.get("type", "result") == "result" and set(result) - {"type"} == RESULT_FIELDS
    assert (result["exit_reason"], result["exit_code"]) == ("interrupted", 130)
    # A call that started counts, even when the interrupt cut it short.
    assert result["tool_calls"] == (1 if during == "command" else 0)
    if fmt == "json":
        assert len(records) == 1
        return
    calls = [r["id"] for r in records if r["type"] == "tool_call"]
    closed = {r["id"]: r for r in records if r["type"] == "tool_result"}
    assert len(calls) == (1 if during == "command" else 0) and set(calls) == set(closed)
    for call in calls:
        assert (closed[call]["ok"], closed[call]["summary"]) == (False, "interrupted")


def test_a_lone_surrogate_in_the_reply_keeps_every_line_valid(fake_server: Any,
                                                              tmp_path: Path) -> None:
    """A server may send half a UTF-16 pair (escaped, valid JSON); it cannot be written as
    UTF-8, so it reaches stdout as U+FFFD instead of ending the run with a traceback."""
    server = fake_server(kind="llamacpp").script(text("half \ud800 a pair"))
    result = run_swival(server, tmp_path, "--output-format", "stream-json", "-p", "go")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert "".join(r["text"] for r in records if r["type"] == "text") == "half \ufffd a pair"
    assert records[-1]["answer"] == "half \ufffd a pair"
