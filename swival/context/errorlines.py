"""Finding the telling error lines in a tool's output, for the ledger.

Two kinds of line matter, and the ledger keeps one of each per result:

    cause    the most specific line: an exception with its message, a failed test
             with its id, a compiler diagnostic with its place, a panic
    outcome  the run's verdict, with a count or a status: "3 failed, 51 passed",
             "FAILED (errors=2)", "test result: FAILED. ...", "FAIL  pkg  0.01s",
             "make: *** [all] Error 1", "error: could not compile ...", "timed out"

What counts as a cause, by ecosystem (tests/data/errorlines/ holds real samples):

    Python   the line that ends a traceback, whatever the exception is called
             (`numpy._core._exceptions._UFuncBinaryResolutionError: ...`,
             `ImproperlyConfigured: ...`, `KeyboardInterrupt`); elsewhere a line naming
             an exception (`KeyError: 'a'`, flake8 `E999 SyntaxError: ...`)
    pytest   `E   ` lines (an exception, else the first line of the last block:
             `E   assert -1 == 5`), `FAILED path::test - reason`
    Go       `panic: ...`, `--- FAIL: TestX` with the message under it, `x.go:5:6: ...`
    Rust     `error[E0308]: ...` with its ` --> file:line`, a test's `panicked at`
             with the assertion under it
    Node     `TypeError: ...`, `Error: ...`, `Error [ERR_MODULE_NOT_FOUND]: ...` (the
             stack below is skipped); an unhandled rejection, by its reason; Jest's
             `● test` with the expectation under it
    compilers  `file:line[:col]: error: ...` (gcc, clang, javac, mypy), tsc's
             `file(line,col): error TS...`
    tools    `error: ...`, `fatal: ...`, pip's `ERROR: ...`, `command not found`,
             `No such file or directory`, `Permission denied`, `Segmentation fault`

A line is judged in that order of strength: specific causes first, then verdicts,
then the generic `error:`-style lines, so cargo's closing `error: could not compile`
is a verdict and not the cause. The last cause wins (runners print the newest, most
relevant line last), and so does the last verdict, preferring one with a count. A
verdict alone is never taken for a cause. Lines are matched case-sensitively where
case carries meaning (exception names), so source text shown in output rarely
matches by accident.
"""

from __future__ import annotations

import re

CAUSE_CHARS = 200
OUTCOME_CHARS = 120
TRACEBACK = "Traceback (most recent call last):"

# A line that names an exception, bare or in pytest's "E   " form.
_EXCEPTION = re.compile(r"^\s*(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?_*[A-Z]\w*"
                        r"(?:Error|Exception|Exit|Interrupt)(?: \[[A-Z][A-Z0-9_]*\])?(?::.*)?$")
# Node's unhandled rejection of a value that is not an Error (bracketed before Node 20):
# its first sentence is always the same, the reason comes last.
_UNHANDLED = re.compile(r"^\[?UnhandledPromiseRejection: (?:.*?\. )??"
                        r"(The promise rejected with the reason .*?)\]?(?: \{)?$")
# The line that ends a Python traceback: a dotted identifier, maybe a message.
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?::.*)?$")
_PYTEST_E = re.compile(r"^E\s{2,}\S.*$")
_STRONG = (
    _EXCEPTION,
    re.compile(r"^\s*(?:FAILED|ERROR)\s+\S+::\S+.*$"),  # pytest's short summary
    re.compile(r"^.*\b_*[A-Z]\w*(?:Error|Exception): \S.*$"),  # "E999 SyntaxError: ..."
    re.compile(r"^\S+:\d+(?::\d+)?: (?:fatal )?error: \S.*$"),  # gcc, clang, javac, mypy
    re.compile(r"^\S+\(\d+,\d+\): error TS\d+: .*$"),  # tsc
    re.compile(r"^\S+\.go:\d+:\d+: \S.*$"),  # go build, go vet
    re.compile(r"^panic: \S.*$"),  # a Go panic
)
# Causes whose explanation is on the next non-empty line, which is appended.
_WITH_NEXT = (
    re.compile(r"^error\[E\d+\]: \S.*$"),  # rustc, with " --> file:line:col"
    re.compile(r"^thread '.*' (?:\(\d+\) )?panicked at .*$"),  # a Rust test's assertion
    re.compile(r"^--- FAIL: \S+.*$"),  # go test, with "file_test.go:9: message"
    re.compile(r"^\s*● \S.*$"),  # a Jest test, with its expectation
)
_OUTCOMES = (
    re.compile(r"^\s*FAILED \(.*\)\s*$"),
    re.compile(r"^.*\b[1-9]\d* (?:failed|failures?|errors?|exceptions?)\b.*$"),
    re.compile(r"^.*\btimed out\b.*$", re.IGNORECASE),
    re.compile(r"^test result: FAILED\b.*$"),
    re.compile(r"^FAIL\s+\S+\s+\d[\d.]*s\s*$"),
    re.compile(r"^make(?:\[\d+\])?: \*\*\* .*$"),
    re.compile(r"^error: (?:could not compile|test failed|aborting due to)\b.*$"),
    re.compile(r"^exit status [1-9]\d*\s*$"),
)
_COUNTED = re.compile(r"\b[1-9]\d* (?:failed|failures?|errors?|exceptions?)\b|errors=")
_WEAK = (
    re.compile(r"^.*(?:^|[\s:])(?:error|fatal|ERROR|Error)(?: ?\[\w+\])?: \S.*$"),
    re.compile(r"^.*\b(?:command not found|No such file or directory|Permission denied"
               r"|Segmentation fault|Killed)\b.*$"),
)


# Every pattern above needs one of these; most lines of output have none, and are
# passed over without trying the patterns (shrinking long command output stays cheap).
_HINT = re.compile(r"rror|xception|Exit|Interrupt|Rejection|FAIL|fatal|panic|●|fail"
                   r"|timed out|not found|No such|denied|Segmentation|Killed|exit status"
                   r"|\*\*\*|^E\s|:\d+:", re.IGNORECASE)


def _matches(line: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    return any(p.match(line) for p in patterns)


def _next_text(lines: list[str], index: int) -> str:
    for line in lines[index + 1:index + 4]:
        if line.strip():
            return line.strip()
    return ""


class _Scan:
    """One pass over the lines, keeping the last cause and the last verdict."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.cause: str | None = None
        self.outcome: str | None = None
        self.counted: str | None = None  # the last verdict that carries a count
        self.traceback = False  # inside a Python traceback, before its last line
        self.saw_traceback = False
        self.pytest_block: str | None = None  # first line of the current E block

    def run(self) -> None:
        for index, line in enumerate(self.lines):
            self._line(index, line)

    def _line(self, index: int, line: str) -> None:
        if line.strip() == TRACEBACK:
            self.traceback = self.saw_traceback = True
            return
        if self.traceback and line.strip() and not line[0].isspace():
            self.traceback = False
            if _RAISED.match(line.strip()):
                self.cause = line.strip()
                return
        self._pytest(line)
        if not _HINT.search(line):
            return
        unhandled = _UNHANDLED.match(line.strip())
        if unhandled:
            self.cause = f"UnhandledPromiseRejection: {unhandled.group(1)}"
        elif _matches(line, _STRONG):
            self.cause = line.strip()
        elif _matches(line, _WITH_NEXT):
            self.cause = f"{line.strip()} {_next_text(self.lines, index)}".strip()
        elif _matches(line, _OUTCOMES):
            self.outcome = line.strip()
            if _COUNTED.search(line):
                self.counted = self.outcome
        elif _matches(line, _WEAK):
            self.cause = line.strip()

    def _pytest(self, line: str) -> None:
        """`E   ` blocks without an exception line: their first line is the cause."""
        if not _PYTEST_E.match(line):
            self.pytest_block = None
            return
        if self.pytest_block is None:
            self.pytest_block = line.strip()
            if not _EXCEPTION.match(line):
                self.cause = self.pytest_block


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + "..."


def error_lines(text: str) -> list[str]:
    """[cause, outcome] as found (either may be missing), cut to a bounded length;
    a bare Traceback header when nothing better exists; [] for clean output."""
    scan = _Scan(text.splitlines())
    scan.run()
    found = [_cut(scan.cause, CAUSE_CHARS)] if scan.cause else []
    outcome = scan.counted or scan.outcome
    if outcome and outcome != scan.cause:
        found.append(_cut(outcome, OUTCOME_CHARS))
    if not found and scan.saw_traceback:
        found.append(TRACEBACK + " [no exception line shown]")
    return found


def error_line(text: str) -> str | None:
    """The single most telling error line of `text` (cause first), or None."""
    found = error_lines(text)
    return found[0] if found else None
