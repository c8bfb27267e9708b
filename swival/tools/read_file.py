"""read_file: numbered lines of a text file, capped, with a note on how to page on."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from swival.messages import ToolResult
from swival.redaction import Redactor, marker
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.deadline import Deadline
from swival.tools.files import remember
from swival.tools.output import SNIFF_BYTES, cut_line, looks_binary
from swival.tools.regular import NotRegularFile, not_regular_message, open_regular, special_kind
from swival.tools.workspace import display, resolve_read

MAX_BYTES = 50 * 1024
MAX_LINE_CHARS = 2000
# Bytes kept of one line: enough for MAX_LINE_CHARS characters of 4-byte UTF-8.
KEEP_LINE_BYTES = 4 * MAX_LINE_CHARS + 4
# Reading a huge file to count its lines (or to reach a far offset) stops after this long.
SCAN_SECONDS = 10.0


def iter_lines(
    f: BinaryIO, keep: int, deadline: Deadline | None = None
) -> Iterator[tuple[bytes, int]]:
    """Yield (first `keep` bytes of the line, full length in bytes) for each line, both
    without the line ending (LF or CRLF), in bounded memory even for a file that is one
    huge line. Stops early, without a partial last line, once `deadline` has passed."""
    prefix, length, last = bytearray(), 0, b""
    while block := f.read(1 << 16):
        if deadline is not None and deadline.expired:
            return
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


@dataclass
class Page:
    """What one read_file call found: numbered lines to show and the line count, which is
    only a lower bound when `counted` is False (the scan ran out of time)."""

    offset: int
    shown: list[tuple[int, str]] = field(default_factory=list)
    total: int = 0
    by_size: bool = False
    counted: bool = True
    secrets: set[str] = field(default_factory=set)  # names of the secrets hidden


class ReadFile:
    """Read lines `offset`.. of a file (1-based), at most `limit` lines and 50 KB, within
    `seconds` of scanning."""

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

    def __init__(self, seconds: float = SCAN_SECONDS) -> None:
        self.seconds = seconds

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
        kind = special_kind(path)
        if kind:
            raise ToolError(not_regular_message(name, kind, "read_file"))
        page = Page(offset)
        try:
            with open_regular(path) as f:
                if looks_binary(f.read(SNIFF_BYTES)):
                    raise ToolError(_binary_message(name))
                f.seek(0)
                deadline = Deadline(self.seconds)
                _collect(f, page, limit, deadline, ctx.redactor)
                page.counted = not deadline.expired
        except NotRegularFile as exc:
            raise ToolError(not_regular_message(name, exc.kind, "read_file")) from None
        except OSError as exc:
            raise ToolError(f"cannot read {name}: {exc.strerror or exc}.") from exc
        except UnicodeDecodeError:
            raise ToolError(_binary_message(name)) from None
        _check_offset(page, name, self.seconds)
        remember(ctx, path)
        meta = {"kind": "file", "path": name, "lines": page.total, "offset": offset,
                "shown": len(page.shown),
                "continue": f"read_file file_path={name} offset={{line}}"}
        return ToolResult(_render(page) + _secrets_note(page.secrets), meta=meta)


def _secrets_note(found: set[str]) -> str:
    if not found:
        return ""
    markers = ", ".join(marker(name) for name in sorted(found))
    return (f"\n[Secret values in this file are shown as {markers}. Keep such a marker "
            "unchanged in write_file or edit_file and the real value is written back.]")


def _binary_message(name: str) -> str:
    return (f"{name} is a binary file (or not UTF-8 text) and cannot be shown. "
            "Use run_command with a suitable tool (e.g. `file`, `xxd | head`) to inspect it.")


def _collect(f: BinaryIO, page: Page, limit: int | None, deadline: Deadline,
             redactor: Redactor) -> None:
    """Fill `page` with the lines to show and the line count; raises UnicodeDecodeError
    for a line that is not UTF-8. Counting stops when `deadline` passes. Secrets are
    hidden before a long line is cut, so a cut never shows half of one."""
    size, full = 0, False
    for raw, length in iter_lines(f, KEEP_LINE_BYTES, deadline):
        page.total += 1
        if page.total < page.offset or full:
            continue
        truncated = length > len(raw)
        text = decode_line(raw, truncated)
        if text is None:
            raise UnicodeDecodeError("utf-8", raw, 0, len(raw), "not UTF-8 text")
        text = redactor.redact(text, page.secrets)
        text = cut_line(text, MAX_LINE_CHARS, length if truncated else None)
        cost = len(text.encode("utf-8")) + len(str(page.total)) + 2
        if page.shown and size + cost > MAX_BYTES:
            full = page.by_size = True
            continue
        page.shown.append((page.total, text))
        size += cost
        full = limit is not None and len(page.shown) >= limit


def _check_offset(page: Page, name: str, seconds: float) -> None:
    if page.shown:
        return
    if not page.counted:
        raise ToolError(
            f"{name} is too large to reach line {page.offset} within {seconds:g} s (stopped "
            f"at line {page.total}). Use run_command with `sed -n '{page.offset},+99p' {name}` "
            "or `tail` instead."
        )
    if page.offset > max(page.total, 1):
        raise ToolError(
            f"offset {page.offset} is past the end of {name}, which has {page.total} lines."
        )


def _render(page: Page) -> str:
    shown = page.shown
    if not shown:
        return "(empty file)"
    width = len(str(shown[-1][0]))
    body = "\n".join(f"{n:>{width}}\t{text}" for n, text in shown)
    last = shown[-1][0]
    if last >= page.total and page.counted:
        return body
    why = " (50 KB per call)" if page.by_size else ""
    total = str(page.total) if page.counted else f"at least {page.total} (counting stopped)"
    return (f"{body}\n[lines {page.offset}-{last} of {total}{why}; "
            f"to continue, call read_file with offset={last + 1}]")
