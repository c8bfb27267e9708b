"""Running one shell command in its own process group, output streamed to a file.

The command runs under bash (or /bin/sh), possibly inside the sandbox, in a new
session, so it and everything it starts share one process group that can be killed as
a whole. stdin is /dev/null (a command that waits for input gets EOF instead of
hanging), and stdout+stderr go to the file the caller passes (never into memory). When
the command ends, times out or is interrupted, whatever is left of its group is killed:
no stray process outlives the call, except one that deliberately left the group
(setsid, daemonizing) outside the sandbox; inside it, the PID namespace ends with bwrap.
An interruption (Ctrl-C, SIGTERM) that comes while the child is being started is held
back until its process id is known, so it ends the child too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

TERM_GRACE_SECONDS = 2.0
INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
# Quiet pagers and prompts that would otherwise wait for a terminal that is not there.
NON_INTERACTIVE_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "DEBIAN_FRONTEND": "noninteractive",
}


@dataclass(frozen=True)
class Outcome:
    """How a command ended: `exit_code` (negative = killed by that signal) or timed out."""

    exit_code: int | None
    timed_out: bool


def shell() -> str:
    """bash when installed (what models write for), else POSIX sh."""
    return shutil.which("bash") or "/bin/sh"


def kill_group(proc: subprocess.Popen[bytes], grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM the whole group, wait up to `grace` for the leader, then SIGKILL the
    group so nothing that ignored SIGTERM (or outlived the leader) survives."""
    pgid = proc.pid  # start_new_session makes the leader's pid the group id
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)
    reap_group(proc)


def reap_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL whatever remains of the group and reap the leader."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold back Ctrl-C and SIGTERM, and deliver them on leaving. Raised inside Popen
    after the fork, they would leave a child whose process id never reached the caller,
    so nothing could end it. Only the main thread handles signals (and may change their
    handlers); elsewhere, and when a handler was not set from Python, nothing is held."""
    previous = {number: signal.getsignal(number) for number in INTERRUPTS}
    if threading.current_thread() is not threading.main_thread() or None in (
            previous.values()):
        yield
        return
    held: list[int] = []
    for number in INTERRUPTS:
        signal.signal(number, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for signum in held:
            signal.raise_signal(signum)


def run_in_group(argv: Sequence[str], cwd: Path, timeout: float, out: BinaryIO,
                 env: Mapping[str, str]) -> Outcome:
    """Run `argv` (usually `[shell(), "-c", command]`, possibly inside bwrap) in `cwd` with
    `env` plus the non-interactive settings, output to `out`. Raises OSError when it
    cannot start; on KeyboardInterrupt (or any exception) kills the group and re-raises,
    also when the interruption came while the child was being started."""
    proc: subprocess.Popen[bytes] | None = None
    try:
        with _interrupts_held():
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**env, **NON_INTERACTIVE_ENV},
            )
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        assert proc is not None  # only wait() times out
        kill_group(proc)
        return Outcome(None, timed_out=True)
    except BaseException:
        if proc is not None:
            kill_group(proc, grace=0.5)
        raise
    reap_group(proc)
    return Outcome(code, timed_out=False)
