"""grep: regex search over file contents, skipping ignored, binary and special files.

The scan runs under a deadline (SCAN_SECONDS): when it passes, grep returns what it found
with a note that the search was stopped. Every match runs under a timeout (regex module; it
counts processor time, so on a busy machine it can take longer by the clock), so a pattern
that backtracks catastrophically on one line is stopped and reported as such.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.deadline import MATCH_SECONDS, Deadline
from swival.tools.ignore import Glob, compile_glob, rules_above, walk
from swival.tools.output import SNIFF_BYTES, looks_binary
from swival.tools.patterns import Search, compile_search
from swival.tools.regular import NotRegularFile, not_regular_message, open_regular, special_kind
from swival.tools.workspace import containing_root, display, resolve_read
from swival.words import plural

MAX_MATCHES = 100
MAX_LINE_CHARS = 200
# Scanning stops after this many matches so a too-broad pattern returns quickly.
COUNT_LIMIT = 5_000
MAX_FILE_BYTES = 10 * 1024 * 1024
SCAN_SECONDS = 10.0
# Smaller files are searched line by line at once: the whole-file prefilter only pays off
# on big ones, and a pattern that times out there would be timed out twice.
QUICK_MIN_CHARS = 32 * 1024


@dataclass
class Scan:
    """One search in progress: the lines to show, the running totals, what was skipped,
    and the deadline (`stopped` once it cut the search short)."""

    deadline: Deadline
    lines: list[str] = field(default_factory=list)
    total: int = 0
    files: int = 0
    searched: int = 0
    skipped_large: int = 0
    skipped_special: int = 0
    stopped: bool = False


class Grep:
    """Search `path` (file or directory) for a Python regex; one line per matching line."""

    read_only = True
    spec = ToolSpec(
        name="grep",
        description="Search file contents with a Python regex.",
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "file or directory"},
                "include": {"type": "string", "description": "e.g. *.py"},
                "case_insensitive": {"type": "boolean"},
            },
            "required": ["pattern"],
        },
    )

    def __init__(self, seconds: float = SCAN_SECONDS) -> None:
        self.seconds = seconds

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = args["pattern"]
        search = compile_search(pattern, bool(args.get("case_insensitive")))
        start = resolve_read(ctx, args.get("path") or ".")
        name = display(ctx, start)
        if not start.exists():
            raise ToolError(f"{name} does not exist. Use list_files to find the right path.")
        kind = special_kind(start)
        if kind:
            raise ToolError(not_regular_message(name, kind, "grep"))
        include = (args.get("include") or "").strip()
        matcher = compile_glob(include) if include else None
        scan = Scan(Deadline(self.seconds))
        for path in _candidates(ctx, start, matcher, scan):
            _search_file(ctx, path, search, scan)
            if scan.total >= COUNT_LIMIT or scan.stopped:
                break
        scan.stopped = scan.stopped or scan.deadline.expired
        meta = {"kind": "matches", "pattern": pattern, "path": name, "matches": scan.total}
        return ToolResult(_render(scan, pattern, name, self.seconds), meta=meta)


def _candidates(ctx: ToolContext, start: Path, matcher: Glob | None,
                scan: Scan) -> Iterator[Path]:
    if start.is_file():
        yield start
        return
    base = containing_root(ctx, start) or start
    for entry in walk(start, rules_above(base, start), scan.deadline):
        path = entry.path
        if entry.is_dir:
            continue
        if matcher and not matcher.match(path.relative_to(start).as_posix(), scan.deadline):
            continue
        if entry.special:
            scan.skipped_special += 1
            continue
        # A symlinked file may point outside the workspace; only follow it if it stays in.
        if path.is_symlink() and containing_root(ctx, path.resolve()) is None:
            continue
        yield path


def _read(path: Path, scan: Scan) -> bytes | None:
    """The bytes of a regular file of at most MAX_FILE_BYTES; None (counted) otherwise."""
    try:
        with open_regular(path) as f:
            if os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                scan.skipped_large += 1
                return None
            return f.read(MAX_FILE_BYTES + 1)
    except NotRegularFile:
        scan.skipped_special += 1
    except OSError:
        pass
    return None


def _search_file(ctx: ToolContext, path: Path, search: Search, scan: Scan) -> None:
    data = _read(path, scan)
    if data is None or looks_binary(data[:SNIFF_BYTES]):
        return
    scan.searched += 1
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    try:
        if (search.quick is not None and len(text) >= QUICK_MIN_CHARS
                and not search.quick.search(text, timeout=scan.deadline.timeout())):
            return
    except TimeoutError:
        pass  # only a shortcut: search line by line, where the timeout is diagnosed
    name, found = "", False
    for number, line in enumerate(text.split("\n"), 1):
        try:
            match = search.line.search(line, timeout=scan.deadline.timeout())
        except TimeoutError:
            if scan.deadline.expired:
                scan.stopped = True
                break
            raise ToolError(
                _catastrophic(search.line.pattern, display(ctx, path), number)) from None
        if not match:
            continue
        name = name or display(ctx, path)
        found = True
        scan.total += 1
        if len(scan.lines) < MAX_MATCHES:
            scan.lines.append(f"{name}:{number}: {_excerpt(line, match)}")
        if scan.total >= COUNT_LIMIT:
            break
    scan.files += found


def _catastrophic(pattern: str, name: str, number: int) -> str:
    return (f"the pattern {pattern!r} ran for more than {MATCH_SECONDS:g} s on one line "
            f"({name}:{number}) and was stopped: it backtracks catastrophically. Use a "
            "simpler pattern: avoid nested or overlapping repeats such as (a+)+ or (a|aa)+, "
            "or search for a literal part of the text.")


def _excerpt(line: str, match: regex.Match[str]) -> str:
    """The line, or for a long line a window around the match with markers."""
    line = line.strip()
    if len(line) <= MAX_LINE_CHARS:
        return line
    at = max(0, line.find(match.group(0)) if match.group(0) else 0)
    begin = max(0, min(at - MAX_LINE_CHARS // 4, len(line) - MAX_LINE_CHARS))
    end = begin + MAX_LINE_CHARS
    return ("…" if begin else "") + line[begin:end] + ("…" if end < len(line) else "")


def _render(scan: Scan, pattern: str, name: str, seconds: float) -> str:
    notes = []
    if scan.lines and scan.total > len(scan.lines):
        total = f"at least {scan.total}" if scan.total >= COUNT_LIMIT else str(scan.total)
        notes.append(f"{len(scan.lines)} of {total} matches in {plural(scan.files, 'file')} shown; "
                     "narrow with a more specific pattern, path or include")
    if scan.stopped:
        notes.append(f"search stopped after {seconds:g} s with {plural(scan.searched, 'file')} "
                     "searched, so there may be more matches; narrow it with path or include")
    if scan.skipped_large:
        notes.append(f"{plural(scan.skipped_large, 'file')} over 10 MB not searched")
    if scan.skipped_special:
        notes.append(f"{plural(scan.skipped_special, 'special file')} (pipes, sockets or devices) "
                     "skipped")
    body = "\n".join(scan.lines) if scan.lines else f"No matches for {pattern!r} in {name}."
    sep = "\n" if scan.lines else " "
    return body + (f"{sep}[{'; '.join(notes)}]" if notes else "")
