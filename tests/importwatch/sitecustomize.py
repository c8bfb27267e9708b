"""An import report for tests that must know whether a whole process ever imported a module.

Python runs `sitecustomize` at start-up when it is on the path, so a test puts this folder
first in PYTHONPATH of the process it starts (the installed `swival` included) and sets
`SWIVAL_IMPORT_LOG` to a file. The process appends `started` to that file at once (proof
the report works) and, when it exits, the top-level name of every module it imported, one
per line. Only modules really imported count: looking a package up without running it
(`importlib.util.find_spec`, as Swival does to find files litellm ships) does not.
"""

from __future__ import annotations

import atexit
import os
import sys


def _append(path: str, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as log:
        log.writelines(line + "\n" for line in lines)


def _report(path: str) -> None:
    _append(path, sorted({name.partition(".")[0] for name in list(sys.modules)}))


if os.environ.get("SWIVAL_IMPORT_LOG"):
    _append(os.environ["SWIVAL_IMPORT_LOG"], ["started"])
    atexit.register(_report, os.environ["SWIVAL_IMPORT_LOG"])
