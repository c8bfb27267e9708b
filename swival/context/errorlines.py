"""Finding the telling error lines in a tool's output, for the ledger.

Two kinds of line matter, and the ledger keeps one of each per result:

    cause    the most specific line: an exception with its message
             ("KeyError: 'a'", "E   TypeError: ..."), a failed test id
             ("FAILED tests/t.py::test_a - ..."), a tool's "error: ..." line, a flake8
             code ("E999 SyntaxError: ..."), "command not found", "No such file ..."
    outcome  the run's verdict, with a count: "=== 2 failed, 3 passed ===",
             "FAILED (errors=2)",
             "tests finished: 9 passed, 1 exceptions", "... timed out"

The last match of each wins (test runners print the newest, most relevant line last).
A summary alone is not a cause: "FAILED (errors=2)" says that something failed, not
what. Lines are matched case-sensitively where the case carries meaning (exception
names), so source text shown in output rarely matches by accident.
"""

from __future__ import annotations

import re

CAUSE_CHARS = 200
OUTCOME_CHARS = 120

_CAUSES = (
    # An exception line, bare or in pytest's "E   " form: "pkg.mod.FooError: message".
    re.compile(r"^\s*(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)"
               r"(?::.*)?$"),
    # A failed test id (pytest's short summary), often with the exception after " - ".
    re.compile(r"^\s*(?:FAILED|ERROR)\s+\S+::\S+.*$"),
    # An exception named inside a line: flake8 "E999 SyntaxError: ...", log prefixes.
    re.compile(r"^.*\b[A-Z]\w*(?:Error|Exception): \S.*$"),
    # Tools and compilers: "error: ...", "fatal: ...", "error[E0308]: ...", pip's "ERROR: ...".
    re.compile(r"^.*(?:^|[\s:])(?:error|fatal|ERROR|Error)(?:\[\w+\])?: \S.*$"),
    re.compile(r"^.*\b(?:command not found|No such file or directory|Permission denied"
               r"|Segmentation fault|Killed)\b.*$"),
)
_OUTCOMES = (
    re.compile(r"^\s*FAILED \(.*\)\s*$"),
    re.compile(r"^.*\b[1-9]\d* (?:failed|failures?|errors?|exceptions?)\b.*$"),
    re.compile(r"^.*\btimed out\b.*$", re.IGNORECASE),
)
_WEAK = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")


def _last_match(lines: list[str], patterns: tuple[re.Pattern[str], ...]) -> str | None:
    for line in reversed(lines):
        if any(p.match(line) for p in patterns):
            return line.strip()
    return None


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + "..."


def error_lines(text: str) -> list[str]:
    """[cause, outcome] as found (either may be missing), cut to a bounded length;
    a bare Traceback header when nothing better exists; [] for clean output."""
    lines = text.splitlines()
    cause = _last_match(lines, _CAUSES)
    outcome = _last_match(lines, _OUTCOMES)
    found = [_cut(cause, CAUSE_CHARS)] if cause else []
    if outcome and outcome != cause:
        found.append(_cut(outcome, OUTCOME_CHARS))
    if not found and _last_match(lines, (_WEAK,)):
        found.append("Traceback (most recent call last): [no exception line shown]")
    return found


def error_line(text: str) -> str | None:
    """The single most telling error line of `text` (cause first), or None."""
    found = error_lines(text)
    return found[0] if found else None
