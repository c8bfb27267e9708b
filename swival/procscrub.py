"""Keep secrets out of this process's own `/proc/<pid>/environ` and `/proc/<pid>/cmdline`.

Commands run without the user's secrets in their environment, but outside the sandbox (no
PID namespace) a command could still read Swival's own start-up environment and arguments
from `/proc/$PPID/environ` and `/proc/$PPID/cmdline` (an `--api-key` given on the command
line), and send them anywhere reversed or encoded. Those files show the memory the kernel
filled at start-up; `scrub` overwrites each secret there with `*`, after giving every
secret variable a fresh copy (`os.environ` re-sets it), so Swival itself and the programs it
starts with the inherited environment still see the real value. Linux only, best effort:
anywhere it cannot be done it does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def _regions() -> list[tuple[int, int]]:
    """The start-up argument and environment areas, from /proc/self/stat (fields 48-51)."""
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])
    return [(arg_start, arg_end), (env_start, env_end)]


def scrub(secrets: Iterable[str]) -> bool:
    """Overwrite `secrets` (values of 8 characters or more) in this process's start-up
    arguments and environment. Returns whether anything was overwritten."""
    values = [s.encode() for s in set(secrets) if len(s) >= 8]
    if not values or not os.path.exists("/proc/self/mem"):
        return False
    for name, value in list(os.environ.items()):
        if any(v in value.encode(errors="surrogateescape") for v in values):
            os.environ[name] = value  # a fresh copy for getenv() and child processes
    done = False
    try:
        regions = _regions()
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            for start, end in regions:
                mem.seek(start)
                area = bytearray(mem.read(end - start))
                before = bytes(area)
                for secret in values:
                    at = area.find(secret)
                    while at >= 0:
                        area[at:at + len(secret)] = b"*" * len(secret)
                        at = area.find(secret, at + len(secret))
                if area != before:
                    mem.seek(start)
                    mem.write(bytes(area))
                    done = True
    except (OSError, ValueError, IndexError):
        return done
    return done
