"""edit_file: replace an exact string in a file the model has read, atomically."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.deadline import Deadline
from swival.tools.files import (
    check_fresh,
    check_regular,
    commit,
    count_text_lines,
    read_text,
    write_back,
)
from swival.tools.workspace import display, resolve_write
from swival.words import plural

MAX_LINES_LISTED = 10
HINT_SECONDS = 2.0
LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


class EditFile:
    """Replace `old_string` by `new_string`. It must occur exactly once unless
    `replace_all`. Files with CRLF line endings are matched and kept as CRLF."""

    read_only = False
    spec = ToolSpec(
        name="edit_file",
        description="Replace old_string with new_string in a file you have read; "
        "old_string must be unique unless replace_all.",
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            "required": ["file_path", "old_string", "new_string"],
        },
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_write(ctx, args["file_path"])
        old_string: str = args["old_string"]
        new_string: str = args["new_string"]
        name = display(ctx, path)
        if not path.exists():
            raise ToolError(f"{name} does not exist. Use write_file to create it.")
        check_regular(ctx, path, "edit_file")
        if old_string == new_string:
            raise ToolError("old_string and new_string are the same; nothing would change.")
        if not old_string:
            raise ToolError("old_string is empty. Give the exact text to replace (include "
                            "a neighbouring line to insert next to it).")
        check_fresh(ctx, path)
        original = read_text(ctx, path)
        # Matched against the file as the model saw it: secrets as markers, so no edit
        # can reach inside a secret's value; write_back puts the values back.
        view = ctx.redactor.redact(original)
        crlf = "\r\n" in view and view.count("\r\n") == view.count("\n")
        text = view.replace("\r\n", "\n") if crlf else view
        old = old_string.replace("\r\n", "\n") if crlf else old_string
        new = new_string.replace("\r\n", "\n") if crlf else new_string
        count = text.count(old)
        if count == 0:
            raise ToolError(_not_found(text, old, name))
        if count > 1 and not args.get("replace_all"):
            raise ToolError(_found_many(text, old, count, name))
        first_line = text.count("\n", 0, text.index(old)) + 1
        updated = text.replace(old, new)
        updated = updated.replace("\n", "\r\n") if crlf else updated
        result, note = write_back(ctx, path, original, updated)
        _, diff = commit(ctx, path, original, result)
        lines = count_text_lines(result)
        where = f"at line {first_line}" if count == 1 else f"{count} replacements"
        meta = {
            "kind": "edit",
            "path": name,
            "changed": [[name, "modified"]],
            "diff": diff,
            "lines": lines,
        }
        return ToolResult(f"Edited {name} ({where}; now {plural(lines, 'line')}).{note}",
                          meta=meta)


def _line_numbers(text: str, needle: str, limit: int) -> list[int]:
    """Line numbers of the first `limit` occurrences, counting newlines only once (a
    one-character needle in a big file must not cost a scan per occurrence)."""
    numbers: list[int] = []
    start, line, counted = 0, 1, 0
    while len(numbers) < limit and (at := text.find(needle, start)) != -1:
        line += text.count("\n", counted, at)
        counted = at
        numbers.append(line)
        start = at + 1
    return numbers


def _found_many(text: str, old: str, count: int, name: str) -> str:
    numbers = _line_numbers(text, old, MAX_LINES_LISTED)
    listed = ", ".join(map(str, numbers[:MAX_LINES_LISTED]))
    more = "" if count <= MAX_LINES_LISTED else f" and {count - MAX_LINES_LISTED} more"
    return (f"old_string occurs {count} times in {name} (lines {listed}{more}). Include more "
            "surrounding lines so it matches exactly once, or set replace_all=true to "
            "replace every occurrence.")


def _not_found(text: str, old: str, name: str) -> str:
    base = f"old_string was not found in {name}."
    old_lines = old.split("\n")
    if all(LINE_NUMBER_PREFIX.match(line) for line in old_lines if line.strip()):
        return (f"{base} It seems to include the line numbers that read_file shows; "
                "remove them (and the tab after them) and copy only the file's text.")
    loose = _loose_match(text, old_lines)
    if loose is not None:
        return (f"{base} Ignoring whitespace, it matches line {loose}: the indentation or "
                "spacing differs. Copy the text exactly as read_file shows it.")
    return (f"{base} Call read_file on {name} to see its current content and copy "
            "old_string exactly, including indentation.")


def _loose_match(text: str, old_lines: list[str]) -> int | None:
    """First line number where `old_lines` match the file ignoring all whitespace (only a
    hint for the error message, so the search gives up after HINT_SECONDS)."""
    def squash(line: str) -> str:
        return "".join(line.split())

    want = [squash(line) for line in old_lines]
    while want and not want[0]:
        want.pop(0)
    while want and not want[-1]:
        want.pop()
    if not want:
        return None
    have = [squash(line) for line in text.split("\n")]
    deadline = Deadline(HINT_SECONDS)
    span = len(want)
    for i in range(len(have) - span + 1):
        if span == 1:
            found = want[0] in have[i]
        else:  # old_string may start and end in the middle of a line
            found = (have[i].endswith(want[0]) and have[i + span - 1].startswith(want[-1])
                     and have[i + 1:i + span - 1] == want[1:-1])
        if found:
            return i + 1
        if i % 1024 == 0 and deadline.expired:
            break
    return None
