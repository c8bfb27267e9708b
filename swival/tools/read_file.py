"""read_file: numbered lines of a text file, capped, with a note on how to page on."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.files import remember
from swival.tools.output import SNIFF_BYTES, cut_line, looks_binary
from swival.tools.workspace import display, resolve_read

MAX_BYTES = 50 * 1024
MAX_LINE_CHARS = 2000
# Bytes kept of one line: enough for MAX_LINE_CHARS characters of 4-byte UTF-8.
KEEP_LINE_BYTES = 4 * MAX_LINE_CHARS + 4


def iter_lines(f: BinaryIO, keep: int) -> Iterator[tuple[bytes, int]]:
    """Yield (first `keep` bytes of the line, full length in bytes) for each line, both
    without the line ending (LF or CRLF), in bounded memory even for a file that is one
    huge line."""
    prefix, length, last = bytearray(), 0, b""
    while block := f.read(1 << 16):
        start = 0
        while (nl := block.find(b"\n", start)) != -1:
            piece = block[start:nl]
            if len(prefix) < keep:
                prefix += piece[: keep - len(prefix)]
            length += len(piece)
            crlf = (piece[-1:] or last) == b"\r"
            yield _strip_cr(prefix, crlf), length - crlf
            prefix, length, last, start = bytearray(), 0, b"", nl + 1
        piece = block[start:]
        if len(prefix) < keep:
            prefix += piece[: keep - len(prefix)]
        length += len(piece)
        last = piece[-1:] or last
    if length:
        yield bytes(prefix), length


def _strip_cr(prefix: bytearray, crlf: bool) -> bytes:
    return bytes(prefix[:-1]) if crlf and prefix.endswith(b"\r") else bytes(prefix)


def decode_line(raw: bytes, truncated: bool) -> str | None:
    """UTF-8 text of a line, or None when it is not valid UTF-8. A line cut in the middle
    of a multi-byte character loses only that character."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if truncated and exc.start >= len(raw) - 3:
            return raw[: exc.start].decode("utf-8", errors="strict")
        return None


class ReadFile:
    """Read lines `offset`.. of a file (1-based), at most `limit` lines and 50 KB."""

    read_only = True
    spec = ToolSpec(
        name="read_file",
        description="Read a text file as numbered lines. Page with offset/limit.",
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "offset": {"type": "integer", "description": "1-based line"},
                "limit": {"type": "integer", "description": "line count"},
            },
            "required": ["file_path"],
        },
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_read(ctx, args["file_path"])
        offset = args.get("offset") or 1
        limit = args.get("limit")
        if offset < 1:
            raise ToolError("offset is a 1-based line number; use offset=1 for the start.")
        if limit is not None and limit < 1:
            raise ToolError("limit must be at least 1 (it is a number of lines).")
        name = display(ctx, path)
        if path.is_dir():
            raise ToolError(f"{name} is a directory; use list_files to see what it holds.")
        if not path.exists():
            raise ToolError(f"{name} does not exist. Use list_files or grep to find the file.")
        try:
            with path.open("rb") as f:
                if looks_binary(f.read(SNIFF_BYTES)):
                    raise ToolError(_binary_message(name))
                f.seek(0)
                shown, total, by_size = _collect(f, offset, limit, name)
        except OSError as exc:
            raise ToolError(f"cannot read {name}: {exc.strerror or exc}.") from exc
        remember(ctx, path)
        text = _render(shown, total, offset, by_size)
        meta = {"kind": "file", "path": name, "lines": total, "offset": offset,
                "shown": len(shown)}
        return ToolResult(text, meta=meta)


def _binary_message(name: str) -> str:
    return (f"{name} is a binary file (or not UTF-8 text) and cannot be shown. "
            "Use run_command with a suitable tool (e.g. `file`, `xxd | head`) to inspect it.")


def _collect(
    f: BinaryIO, offset: int, limit: int | None, name: str
) -> tuple[list[tuple[int, str]], int, bool]:
    """Numbered lines to show, total line count, and whether the byte cap stopped us."""
    shown: list[tuple[int, str]] = []
    size, total, full, by_size = 0, 0, False, False
    for raw, length in iter_lines(f, KEEP_LINE_BYTES):
        total += 1
        if total < offset or full:
            continue
        truncated = length > len(raw)
        text = decode_line(raw, truncated)
        if text is None:
            raise ToolError(_binary_message(name))
        text = cut_line(text, MAX_LINE_CHARS, length if truncated else None)
        cost = len(text.encode("utf-8")) + len(str(total)) + 2
        if shown and size + cost > MAX_BYTES:
            full = by_size = True
            continue
        shown.append((total, text))
        size += cost
        full = limit is not None and len(shown) >= limit
    if offset > max(total, 1):
        raise ToolError(
            f"offset {offset} is past the end of {name}, which has {total} lines."
        )
    return shown, total, by_size


def _render(shown: list[tuple[int, str]], total: int, offset: int, by_size: bool) -> str:
    if not shown:
        return "(empty file)"
    width = len(str(shown[-1][0]))
    body = "\n".join(f"{n:>{width}}\t{text}" for n, text in shown)
    last = shown[-1][0]
    if last >= total:
        return body
    why = " (50 KB per call)" if by_size else ""
    return (f"{body}\n[lines {offset}-{last} of {total}{why}; "
            f"to continue, call read_file with offset={last + 1}]")
