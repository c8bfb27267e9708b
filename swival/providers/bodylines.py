"""A reply body split into lines, with bounded memory.

httpx's own `iter_lines()` keeps everything up to the next line break, so a server (or
whatever answers at `--base-url`) that sends gigabytes without one fills the memory and
the run ends in a MemoryError. `body_lines` keeps at most `MAX_LINE_BYTES` of a line and
reads at most `MAX_BODY_BYTES` of a body; past either it raises `BodyTooLarge`. A chat
stream never comes near them: its lines are single events (a few hundred bytes, a whole
tool call at most), and the request's `max_tokens` bounds the whole reply.

Lines end at `\\n`, `\\r\\n` or `\\r` (as server-sent events allow) and are decoded as
UTF-8, each invalid byte becoming U+FFFD, as httpx did.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_BODY_BYTES = 256 * 1024 * 1024


class BodyTooLarge(Exception):
    """The body broke one of the limits; the message says which, for a person."""


def body_lines(
    chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES, max_body: int = MAX_BODY_BYTES
) -> Iterator[str]:
    """The lines of the body whose pieces are `chunks` (without their line ends)."""
    pending = bytearray()
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_body:
            raise BodyTooLarge(f"sent a reply of more than {_megabytes(max_body)}")
        pending += chunk
        if b"\n" in chunk or b"\r" in chunk:  # else only the pending line grew
            *done, rest = _split(bytes(pending))
            pending = bytearray(rest)
            yield from (line.decode("utf-8", "replace") for line in done)
        if len(pending) > max_line:
            raise BodyTooLarge(f"sent more than {_megabytes(max_line)} without a line break")
    last = bytes(pending).removesuffix(b"\r")
    if last:
        yield last.decode("utf-8", "replace")


def _split(data: bytes) -> list[bytes]:
    """`data` cut at each line end; the last item is the unfinished rest (maybe empty). A
    `\\r` at the very end stays in the rest: a `\\n` may follow in the next chunk."""
    held = data.endswith(b"\r")
    parts = (data[:-1] if held else data).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    lines = parts.split(b"\n")
    if held:
        lines[-1] += b"\r"
    return lines


def _megabytes(count: int) -> str:
    return f"{count // (1024 * 1024):,} MB"
