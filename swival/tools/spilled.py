"""Long text for the model: its head inline, the whole of it in a spill file the model
can page through with read_file (fetch_url's pages, MCP tool results)."""

from __future__ import annotations

from typing import Any

from swival.state import spill_text
from swival.tools.base import ToolContext
from swival.tools.workspace import display

PAGE_LINES = 400  # the read_file limit suggested for reading on


def head_or_spill(text: str, limit: int, ctx: ToolContext, stem: str,
                  what: str) -> tuple[str, dict[str, Any]]:
    """`text` with the session's secrets hidden: whole when it has at most `limit`
    characters, else its first `limit` characters (whole lines) and a line saying how far
    it was cut and where the whole `what` ("page", "result") is saved. Also returns the
    meta for a saved text (`kind` "file", its path and offset; `spill_path`,
    `total_chars` and `total_lines`, the file and size of the whole text), so the
    context engine's own cap continues in that same file and does not save the head a
    second time."""
    text = ctx.redactor.redact(text)
    if len(text) <= limit:
        return text, {}
    cut = text.rfind("\n", 0, limit)
    shown = text[: cut + 1] if cut > limit // 2 else text[:limit]
    next_line = shown.count("\n") + 1
    meta: dict[str, Any] = {}
    try:
        saved = display(ctx, spill_text(text, ctx.spill_dir, stem).resolve())
    except OSError as exc:
        note = f"the rest could not be saved ({exc.strerror or exc})"
    else:
        meta = {"kind": "file", "path": saved, "offset": 1,
                # how the context engine tells the model to go on, if it cuts further
                "continue": f"read_file file_path={saved} offset={{line}}",
                # the whole text is saved already: the engine must not save its head again
                "spill_path": saved, "total_chars": len(text), "total_lines": line_count(text)}
        note = (f"the whole text is saved in {saved}: read it with read_file "
                f"file_path=\"{saved}\" offset={next_line} limit={PAGE_LINES}")
    body = shown if shown.endswith("\n") else shown + "\n"
    return f"{body}[{what} cut at {len(shown)} of {len(text)} characters; {note}]", meta


def line_count(text: str) -> int:
    """Lines of `text`, the last one counted whether or not a newline ends it."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)
