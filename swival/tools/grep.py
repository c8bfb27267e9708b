"""grep: regex search over file contents, skipping ignored and binary files."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.ignore import compile_glob, rules_above, walk
from swival.tools.output import SNIFF_BYTES, looks_binary
from swival.tools.workspace import containing_root, display, resolve_read

MAX_MATCHES = 100
MAX_LINE_CHARS = 200
# Scanning stops after this many matches so a too-broad pattern returns quickly.
COUNT_LIMIT = 5_000
MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class Search:
    """The per-line regex, and the whole-file prefilter when one is safe."""

    regex: re.Pattern[str]
    quick: re.Pattern[str] | None


@dataclass
class Hits:
    """What a search found: the lines to show and the running totals."""

    lines: list[str] = field(default_factory=list)
    total: int = 0
    files: int = 0
    skipped_large: int = 0


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

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = args["pattern"]
        flags = re.IGNORECASE if args.get("case_insensitive") else 0
        try:
            search = Search(re.compile(pattern, flags), _quick_filter(pattern, flags))
        except re.error as exc:
            raise ToolError(
                f"invalid regex {pattern!r}: {exc}. Escape special characters such as "
                "( ) [ ] { } . * + ? | with a backslash to match them literally."
            ) from exc
        start = resolve_read(ctx, args.get("path") or ".")
        name = display(ctx, start)
        if not start.exists():
            raise ToolError(f"{name} does not exist. Use list_files to find the right path.")
        include = (args.get("include") or "").strip()
        hits = Hits()
        for path in _candidates(ctx, start, include):
            _search_file(ctx, path, search, hits)
            if hits.total >= COUNT_LIMIT:
                break
        meta = {"kind": "matches", "pattern": pattern, "path": name, "matches": hits.total}
        return ToolResult(_render(hits, pattern, name), meta=meta)


def _candidates(ctx: ToolContext, start: Path, include: str) -> Iterator[Path]:
    if start.is_file():
        yield start
        return
    matcher = compile_glob(include) if include else None
    base = containing_root(ctx, start) or start
    for path, is_dir in walk(start, rules_above(base, start)):
        if is_dir or (matcher and not matcher.match(path.relative_to(start).as_posix())):
            continue
        # A symlinked file may point outside the workspace; only follow it if it stays in.
        if path.is_symlink() and containing_root(ctx, path.resolve()) is None:
            continue
        yield path


def _quick_filter(pattern: str, flags: int) -> re.Pattern[str] | None:
    """A whole-file regex that matches whenever some line matches, used to skip files
    fast; None when lookarounds or \\A/\\Z anchors could make it disagree with
    the per-line search."""
    if "(?" in pattern or "\\A" in pattern or "\\Z" in pattern:
        return None
    return re.compile(pattern, flags | re.MULTILINE)


def _search_file(ctx: ToolContext, path: Path, search: Search, hits: Hits) -> None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            hits.skipped_large += 1
            return
        data = path.read_bytes()
    except OSError:
        return
    if looks_binary(data[:SNIFF_BYTES]):
        return
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    if search.quick is not None and not search.quick.search(text):
        return
    name, found = "", False
    for number, line in enumerate(text.split("\n"), 1):
        match = search.regex.search(line)
        if not match:
            continue
        name = name or display(ctx, path)
        found = True
        hits.total += 1
        if len(hits.lines) < MAX_MATCHES:
            hits.lines.append(f"{name}:{number}: {_excerpt(line, match)}")
        if hits.total >= COUNT_LIMIT:
            break
    hits.files += found


def _excerpt(line: str, match: re.Match[str]) -> str:
    """The line, or for a long line a window around the match with markers."""
    line = line.strip()
    if len(line) <= MAX_LINE_CHARS:
        return line
    at = max(0, line.find(match.group(0)) if match.group(0) else 0)
    begin = max(0, min(at - MAX_LINE_CHARS // 4, len(line) - MAX_LINE_CHARS))
    end = begin + MAX_LINE_CHARS
    return ("…" if begin else "") + line[begin:end] + ("…" if end < len(line) else "")


def _render(hits: Hits, pattern: str, name: str) -> str:
    notes = []
    if hits.skipped_large:
        notes.append(f"{hits.skipped_large} file(s) over 10 MB not searched")
    if not hits.lines:
        text = f"No matches for {pattern!r} in {name}."
        return text + (f" ({notes[0]})" if notes else "")
    body = "\n".join(hits.lines)
    if hits.total > len(hits.lines):
        total = f"at least {hits.total}" if hits.total >= COUNT_LIMIT else str(hits.total)
        notes.insert(0, f"{len(hits.lines)} of {total} matches in {hits.files} files shown; "
                        "narrow with a more specific pattern, path or include")
    return body + (f"\n[{'; '.join(notes)}]" if notes else "")
