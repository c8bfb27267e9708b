"""run_command: exit codes, policy refusal, spill files, timeouts and process groups."""

from __future__ import annotations

import os
import random
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.process import run_in_group
from swival.tools.registry import ToolRegistry
from swival.tools.run_command import INLINE_BYTES
from swival.tools.sandbox import Sandbox, SandboxConfig
from tests.e2e import bwrap_problem, gone, pids_of, unique_sleep


def run(ctx: ToolContext, **args: Any) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", "run_command", args), ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path, command_timeout=20)


def test_output_and_exit_code(ctx: ToolContext) -> None:
    result = run(ctx, command="echo out; echo err >&2; exit 2")
    assert result.content == "out\nerr\n[exit code 2]"
    assert not result.is_error
    assert dict(result.meta) == {"kind": "command", "command": "echo out; echo err >&2; exit 2",
                                 "exit_code": 2}


def test_runs_in_root_with_empty_stdin(ctx: ToolContext) -> None:
    result = run(ctx, command="pwd; cat; echo done")
    assert result.content == f"{ctx.root}\ndone\n[exit code 0]"


def test_colour_codes_and_progress_redraws_are_cleaned(ctx: ToolContext) -> None:
    result = run(ctx, command=r"printf '\033[31mred\033[0m\n10%%\r50%%\r100%%\n'")
    assert result.content == "red\n100%\n[exit code 0]"


def test_refused_command_is_not_run(ctx: ToolContext) -> None:
    seen: list[str] = []

    def deny(command: str) -> str | None:
        seen.append(command)
        return "not today"

    ctx.approve = deny
    result = run(ctx, command="touch ran.txt")
    assert result.is_error and result.content == "command refused: not today"
    assert result.meta["refused"] is True and result.meta["kind"] == "command"
    assert seen == ["touch ran.txt"]
    assert not (ctx.root / "ran.txt").exists()


def test_large_output_is_spilled_with_head_and_tail(ctx: ToolContext) -> None:
    result = run(ctx, command="seq 1 20000")
    assert len(result.content.encode()) < INLINE_BYTES
    spill = result.meta["spill_path"]
    assert spill == ".swival/out/session/cmd-1.txt"
    full = (ctx.root / spill).read_text()
    assert full == "".join(f"{i}\n" for i in range(1, 20001))
    lines = result.content.splitlines()
    assert lines[0] == "1" and lines[-2] == "20000" and lines[-1] == "[exit code 0]"
    note = next(line for line in lines if line.startswith("[…"))
    first_hidden = int(note.split("lines ")[1].split("-")[0])
    assert lines[first_hidden - 2] == str(first_hidden - 1)  # head ends just before the gap
    assert f'read_file file_path="{spill}" offset={first_hidden} limit=200' in note
    # for the tool line: the output lines the preview holds, of the whole output's
    assert result.meta["output_lines"] == 20000
    assert result.meta["preview_lines"] == len(lines) - 2  # less the note and exit code
    assert "of 20000 not shown" in note
    # The pointer works: read_file pages the spill file from where the preview stopped.
    page = ToolRegistry(core_tools()).run(
        ToolCall("c2", "read_file", {"file_path": spill, "offset": first_hidden, "limit": 1}),
        ctx)
    assert page.content.startswith(f"{first_hidden}\t{first_hidden}")


def test_output_at_the_limit_stays_inline(ctx: ToolContext) -> None:
    result = run(ctx, command=f"head -c {INLINE_BYTES} /dev/zero | tr '\\0' 'a'")
    assert "spill_path" not in result.meta
    assert result.content.startswith("a" * INLINE_BYTES)


def test_fifty_megabytes_of_output_stays_bounded(ctx: ToolContext) -> None:
    result = run(ctx, command="yes 0123456789abcdef | head -c 50000000")
    spill = ctx.root / result.meta["spill_path"]
    assert spill.stat().st_size == 50_000_000
    assert len(result.content) < 8_000
    assert "not shown" in result.content and result.meta["exit_code"] == 0


def test_spill_failure_still_gives_preview(ctx: ToolContext) -> None:
    (ctx.root / ".swival").write_text("a file where the spill directory should be")
    result = run(ctx, command="seq 1 20000")
    assert not result.is_error
    assert "could not be saved" in result.content
    assert "spill_path" not in result.meta
    assert result.content.splitlines()[0] == "1"
    assert result.content.splitlines()[-2] == "20000"


SANDBOX_PROBLEM = bwrap_problem()


@pytest.fixture(params=["plain", "sandboxed"])
def either_ctx(request: pytest.FixtureRequest, tmp_path: Path) -> ToolContext:
    """A context running commands directly, then one running them under bwrap: killing
    the process group must reach everything in both."""
    if request.param == "plain":
        return ToolContext(root=tmp_path, command_timeout=20)
    if SANDBOX_PROBLEM:
        pytest.skip(f"no working bubblewrap: {SANDBOX_PROBLEM}")
    return ToolContext(root=tmp_path, command_timeout=20,
                       sandbox=Sandbox(SandboxConfig(mode="on")))


def test_timeout_kills_the_whole_group(either_ctx: ToolContext) -> None:
    sleeper = unique_sleep()
    started = time.monotonic()
    result = run(either_ctx, command=f"{sleeper} & echo started > started.txt; wait", timeout=1)
    assert time.monotonic() - started < 10
    assert result.is_error
    assert "timed out after 1 s" in result.content and "larger timeout" in result.content
    assert result.meta["exit_code"] is None
    assert (either_ctx.root / "started.txt").exists()
    assert gone(sleeper)


def test_timeout_escalates_to_sigkill(either_ctx: ToolContext) -> None:
    sleeper = unique_sleep()
    command = f"trap '' TERM; {sleeper} & echo started > started.txt; while :; do sleep 0.1; done"
    result = run(either_ctx, command=command, timeout=1)
    assert result.is_error and "timed out" in result.content
    assert (either_ctx.root / "started.txt").exists()
    assert gone(sleeper)


def test_background_child_does_not_outlive_the_command(either_ctx: ToolContext) -> None:
    sleeper = unique_sleep()
    result = run(either_ctx, command=f"{sleeper} >/dev/null & echo $!")
    assert result.meta["exit_code"] == 0
    assert int(result.content.splitlines()[0]) > 0, "the child was started"
    assert gone(sleeper)


def test_keyboard_interrupt_kills_group_and_propagates(either_ctx: ToolContext) -> None:
    sleeper = unique_sleep()
    seen: list[int] = []

    def interrupt_once_running() -> None:
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            seen.extend(pids_of(sleeper))
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run(either_ctx, command=f"{sleeper} & wait")
    assert seen, "the command's child was running when Ctrl-C came"
    assert gone(sleeper)


class Interrupted(Exception):
    """What this test's SIGINT handler raises (a stray one fails the test, not the run)."""


def test_an_interruption_while_the_command_starts_still_ends_it(tmp_path: Path) -> None:
    """Ctrl-C at random moments of the first milliseconds, while the child is being
    started: whenever it got started, it is ended (without holding interruptions back
    during Popen, about half of these children kept running)."""
    rng, survivors = random.Random(3), []

    def interrupt(_signum: int, _frame: object) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        for _ in range(40):
            sleeper = unique_sleep()
            timer = threading.Timer(rng.uniform(0, 0.004), os.kill,
                                    (os.getpid(), signal.SIGINT))
            try:
                timer.start()
                with tempfile.TemporaryFile() as out:
                    run_in_group(["/bin/sh", "-c", f"exec {sleeper}"], tmp_path, 20, out,
                                 os.environ)
            except Interrupted:
                pass
            timer.join()
            if not gone(sleeper, wait=1.0):
                survivors.append(sleeper)
                for pid in pids_of(sleeper):
                    os.kill(pid, signal.SIGKILL)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert survivors == []


def test_bad_arguments(ctx: ToolContext) -> None:
    assert "command is empty" in run(ctx, command="  ").content
    assert "timeout must be between" in run(ctx, command="true", timeout=0).content
    assert "timeout must be between" in run(ctx, command="true", timeout=10**6).content


def test_signal_death_is_reported(either_ctx: ToolContext) -> None:
    result = run(either_ctx, command="kill -9 $$")
    assert result.content.endswith("[killed by signal SIGKILL]")
    assert result.meta["exit_code"] == -9
