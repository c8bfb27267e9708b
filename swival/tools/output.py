"""Shaping raw output for the model: binary sniffing, line cutting, and head+tail
previews of outputs too large to send whole (the full text is spilled to a file the
model can page through with read_file: see swival/state/spills.py)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import BinaryIO

SNIFF_BYTES = 8192
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def looks_binary(head: bytes) -> bool:
    """True when the first bytes of a file hold a NUL (the test git and grep use)."""
    return b"\0" in head[:SNIFF_BYTES]


def cut_line(text: str, limit: int, total_bytes: int | None = None) -> str:
    """`text` cut to `limit` characters, with a marker giving its full length (in bytes
    when only a prefix of the line was read, as `total_bytes` then says)."""
    if len(text) <= limit and total_bytes is None:
        return text
    size = f"{total_bytes} bytes" if total_bytes is not None else f"{len(text)} chars"
    return f"{text[:limit]}… [line cut: {size}]"


def strip_ansi(text: str) -> str:
    """Remove terminal colour and cursor sequences (they cost tokens and mean nothing)."""
    return ANSI_ESCAPE.sub("", text)


def count_lines(f: BinaryIO) -> int:
    """Number of lines in an open binary file (a last line without newline counts)."""
    f.seek(0)
    lines, last = 0, b"\n"
    while block := f.read(1 << 20):
        lines += block.count(b"\n")
        last = block[-1:]
    return lines + (last != b"\n")


@dataclass(frozen=True)
class Preview:
    """The start and end of a large output, cut at line boundaries."""

    head: str
    tail: str
    head_lines: int  # lines 1..head_lines are in `head`
    tail_from: int  # `tail` starts at this 1-based line
    total_lines: int
    total_bytes: int


def make_preview(f: BinaryIO, head_bytes: int, tail_bytes: int) -> Preview:
    """Read a head+tail preview of an open binary file without loading the rest."""
    total_bytes = f.seek(0, os.SEEK_END)
    total_lines = count_lines(f)
    f.seek(0)
    head = f.read(head_bytes)
    if b"\n" in head and len(head) == head_bytes:
        head = head[: head.rindex(b"\n") + 1]
    f.seek(max(len(head), total_bytes - tail_bytes))
    tail = f.read()
    if b"\n" in tail[:-1] and total_bytes - tail_bytes > len(head):
        tail = tail[tail.index(b"\n") + 1:]
    head_lines = head.count(b"\n")
    tail_lines = tail.count(b"\n") + (not tail.endswith(b"\n") and bool(tail))
    return Preview(
        head=head.decode("utf-8", errors="replace"),
        tail=tail.decode("utf-8", errors="replace"),
        head_lines=head_lines,
        tail_from=total_lines - tail_lines + 1,
        total_lines=total_lines,
        total_bytes=total_bytes,
    )
