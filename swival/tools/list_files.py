"""list_files: a directory's entries, or a recursive glob search, minus ignored files."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.ignore import (
    RuleSet,
    compile_glob,
    is_ignored,
    load_rules,
    rules_above,
    walk,
)
from swival.tools.workspace import containing_root, display, resolve_read

MAX_ENTRIES = 100
# Counting stops here so a huge tree cannot stall the call; the total then reads "N+".
COUNT_LIMIT = 10_000


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
        entries = _matching(start, stack, pattern) if pattern else _children(start, stack)
        shown: list[str] = []
        total = 0
        for path, is_dir in entries:
            total += 1
            if len(shown) < MAX_ENTRIES:
                shown.append(display(ctx, path) + ("/" if is_dir else ""))
            if total >= COUNT_LIMIT:
                break
        text = _render(shown, total, name, pattern)
        meta = {"kind": "listing", "path": name, "count": total}
        return ToolResult(text, meta=meta)


def _children(start: Path, stack: tuple[RuleSet, ...]) -> Iterator[tuple[Path, bool]]:
    own = load_rules(start)
    full = (*stack, own) if own else stack
    try:
        children = sorted(start.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        raise ToolError(f"cannot list {start}: {exc.strerror or exc}.") from exc
    for child in children:
        is_dir = child.is_dir()
        if not is_ignored(child, is_dir, full):
            yield child, is_dir


def _matching(start: Path, stack: tuple[RuleSet, ...], pattern: str) -> Iterator[tuple[Path, bool]]:
    matcher = compile_glob(pattern)
    for path, is_dir in walk(start, stack):
        if matcher.match(path.relative_to(start).as_posix()):
            yield path, is_dir


def _render(shown: list[str], total: int, name: str, pattern: str) -> str:
    if not shown:
        if pattern:
            return f"No files match {pattern!r} under {name}."
        return f"{name} is empty (or holds only ignored files)."
    body = "\n".join(shown)
    more = total - len(shown)
    if more <= 0:
        return body
    count = f"{more}+" if total >= COUNT_LIMIT else str(more)
    hint = ("a narrower pattern or path" if pattern
            else 'a subdirectory as path, or a pattern such as "**/*.py"')
    return f"{body}\n[{count} more entries not shown; narrow with {hint}]"
