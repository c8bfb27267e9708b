"""list_files: a directory's entries, or a recursive glob search, minus ignored files."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.deadline import Deadline
from swival.tools.ignore import (
    Entry,
    RuleSet,
    compile_glob,
    is_ignored,
    load_rules,
    rules_above,
    scan_dir,
    walk,
)
from swival.tools.workspace import containing_root, display, resolve_read
from swival.words import plural

MAX_ENTRIES = 100
# Counting stops here so a huge tree cannot stall the call; the total then reads "N+".
COUNT_LIMIT = 10_000
SCAN_SECONDS = 10.0


@dataclass
class Listing:
    """What a listing found: the entries to show, how many matched in all, how many pipes,
    sockets or devices were left out, and whether the deadline cut the walk short."""

    shown: list[str]
    total: int = 0
    special: int = 0
    stopped: bool = False


class ListFiles:
    """Without `pattern`: the entries of `path`. With it: every file or directory below
    `path` whose relative path matches the glob. Paths are shown relative to the root."""

    read_only = True
    spec = ToolSpec(
        name="list_files",
        description="List a directory, or find files below it by glob pattern.",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "pattern": {"type": "string", "description": "e.g. **/*.py"},
            },
        },
    )

    def __init__(self, seconds: float = SCAN_SECONDS) -> None:
        self.seconds = seconds

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        start = resolve_read(ctx, args.get("path") or ".")
        name = display(ctx, start)
        if not start.exists():
            raise ToolError(f"{name} does not exist. Call list_files without a path to "
                            "see the project root.")
        if not start.is_dir():
            raise ToolError(f"{name} is a file, not a directory; read it with read_file.")
        pattern = (args.get("pattern") or "").strip()
        base = containing_root(ctx, start) or start
        stack = rules_above(base, start)
        deadline = Deadline(self.seconds)
        entries = (_matching(start, stack, pattern, deadline) if pattern
                   else _children(start, stack, deadline))
        listing = Listing([])
        for entry in entries:
            if entry.special:
                listing.special += 1
                continue
            listing.total += 1
            if len(listing.shown) < MAX_ENTRIES:
                listing.shown.append(display(ctx, entry.path) + ("/" if entry.is_dir else ""))
            if listing.total >= COUNT_LIMIT:
                break
        listing.stopped = deadline.expired
        meta = {"kind": "listing", "path": name, "count": listing.total}
        return ToolResult(_render(listing, name, pattern, self.seconds), meta=meta)


def _children(start: Path, stack: tuple[RuleSet, ...], deadline: Deadline) -> Iterator[Entry]:
    own = load_rules(start)
    full = (*stack, own) if own else stack
    try:
        children = scan_dir(start)
    except OSError as exc:
        raise ToolError(f"cannot list {start}: {exc.strerror or exc}.") from exc
    for child in children:
        if deadline.expired:
            return
        if not is_ignored(child.path, child.is_dir, full, deadline):
            yield child


def _matching(start: Path, stack: tuple[RuleSet, ...], pattern: str,
              deadline: Deadline) -> Iterator[Entry]:
    matcher = compile_glob(pattern)
    for entry in walk(start, stack, deadline):
        if matcher.match(entry.path.relative_to(start).as_posix(), deadline):
            yield entry


def _render(listing: Listing, name: str, pattern: str, seconds: float) -> str:
    notes = []
    if listing.special:
        notes.append(f"{plural(listing.special, 'special file')} (pipes, sockets or devices) not "
                     "shown")
    if listing.stopped:
        notes.append(f"listing stopped after {seconds:g} s, so it is incomplete; narrow it "
                     "with a subdirectory as path or a more specific pattern")
    if not listing.shown:
        if pattern:
            text = f"No files match {pattern!r} under {name}."
        else:
            text = f"{name} is empty (or holds only ignored files)."
        return text + (f" [{'; '.join(notes)}]" if notes else "")
    more = listing.total - len(listing.shown)
    if more > 0:
        count = f"{more}+" if listing.total >= COUNT_LIMIT else str(more)
        hint = ("a narrower pattern or path" if pattern
                else 'a subdirectory as path, or a pattern such as "**/*.py"')
        notes.insert(0, f"{count} more entries not shown; narrow with {hint}")
    body = "\n".join(listing.shown)
    return body + (f"\n[{'; '.join(notes)}]" if notes else "")
