"""Without a terminal, the installed `swival` writes whole diagnostic lines to stderr: a
log or a CI job gets every tool line, compaction and stop message on one line, never
wrapped at 80 columns or cut."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e import run_swival
from tests.fakeserver import FakeServer, Reply

LONG_PATH = "src/" + "a_rather_long_directory_name/" * 5 + "missing_module.py"


def test_stderr_in_a_pipe_gets_whole_lines(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    with FakeServer(kind="llamacpp", window=16_384) as server:
        server.script(Reply(tool_calls=(("read_file", {"file_path": LONG_PATH}),)),
                      Reply(tool_calls=(("run_command", {"command": "ls " + "x" * 90}),)))
        done = run_swival(server, tmp_path, "--max-turns", "2", "--commands", "none", "-p",
                          "look around", env={"COLUMNS": "40"})
    lines = done.stderr.splitlines()
    read = next(line for line in lines if line.startswith("✗ read_file"))
    assert read == f"✗ read_file {LONG_PATH} — {LONG_PATH} does not exist"  # whole
    refused = next(line for line in lines if line.startswith("✗ run_command"))
    assert refused == f"✗ run_command ls {'x' * 90} — not run: commands are disabled (--commands)"
    assert ("Stopped after 2 model calls without a final answer (raise --max-turns to allow "
            "more).") in lines



def test_a_command_in_a_run_nobody_can_answer_is_refused_as_such(tmp_path: Path) -> None:
    """The default `ask` with no terminal: the line says approval was needed and could not
    be asked, not that commands were switched off."""
    (tmp_path / ".git").mkdir()
    with FakeServer(kind="llamacpp", window=16_384) as server:
        server.script(Reply(tool_calls=(("run_command", {"command": "ls"}),)),
                      Reply(text="done"))
        done = run_swival(server, tmp_path, "-p", "look around")
    refused = next(line for line in done.stderr.splitlines()
                   if line.startswith("✗ run_command"))
    assert refused == "✗ run_command ls — not run: commands need approval and this run cannot ask"
    assert "no terminal to ask on" in json.dumps(server.requests[1]["messages"])
