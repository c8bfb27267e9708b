"""write_file: create a file, or replace one the model has read, atomically."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
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


class WriteFile:
    """Write `content` to `file_path` (parents created). Replacing an existing file needs a
    read_file of it earlier in the session, and no change on disk since."""

    read_only = False
    spec = ToolSpec(
        name="write_file",
        description="Create or overwrite a file (read it first if it exists).",
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "content": {"type": "string"},
            },
            "required": ["file_path", "content"],
        },
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_write(ctx, args["file_path"])
        content: str = args["content"]
        name = display(ctx, path)
        if path.is_dir():
            raise ToolError(f"{name} is a directory; give a file path.")
        check_regular(ctx, path, "write_file")
        old: str | None = None
        if path.exists():
            check_fresh(ctx, path)
            old = read_text(ctx, path)
        text, note = write_back(ctx, path, old, content)
        created, diff = commit(ctx, path, old, text)
        lines = count_text_lines(text)
        status = "created" if created else "modified"
        verb = "Created" if created else "Wrote"
        meta = {
            "kind": "write",
            "path": name,
            "changed": [[name, status]],
            "diff": diff,
            "lines": lines,
        }
        return ToolResult(f"{verb} {name} ({plural(lines, 'line')}).{note}", meta=meta)
