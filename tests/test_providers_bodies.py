"""Replies that are no chat stream, through the installed `swival` against a raw loopback
server: a web page with HTTP 200, a body of gigabytes without a line break (memory must
stay bounded), and invalid UTF-8 inside the stream. Each ends without a traceback, with a
message that says what the server sent; plus the line splitter on its own."""

from __future__ import annotations

import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swival.providers.bodylines import BodyTooLarge, body_lines
from tests.e2e import run_swival
from tests.evidence import record
from tests.rawserver import RawServer

GIGABYTE = 1024 * 1024 * 1024
MEMORY_LIMIT = GIGABYTE  # address space for swival; the endless body alone would need more


def swival(
    server: RawServer, root: Path, *args: str, **popen: Any
) -> subprocess.CompletedProcess[str]:
    return run_swival(
        None,
        root,
        "--provider",
        "llamacpp",
        "--base-url",
        server.url,
        "--retries",
        "0",
        *args,
        "-p",
        "hi",
        timeout=90,
        **popen,
    )


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def endless(piece: bytes, total: int = 4 * GIGABYTE) -> Iterator[bytes]:
    """`piece` again and again, `total` bytes at most (the client hangs up long before)."""
    yield b'data: {"choices": [{"delta": {"content": "'
    for _ in range(total // len(piece)):
        yield piece


def test_a_web_page_with_http_200_is_named_as_such(tmp_path: Path) -> None:
    server = RawServer(
        "text/html; charset=utf-8",
        b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>",
    )
    try:
        result = swival(server, tmp_path)
    finally:
        server.close()
    record(
        "malformed output",
        "provider: HTTP 200 with an HTML page",
        "swival",
        traceback="Traceback" in result.stderr,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "answered with a web page (text/html), not a chat reply" in result.stderr
    assert "--base-url" in result.stderr
    assert "empty reply" not in result.stderr
    assert server.requests == 1, "a web page is not asked for again"


@pytest.mark.parametrize("content_type", ["text/event-stream", "application/json"])
def test_a_body_of_gigabytes_without_a_line_break_keeps_memory_bounded(
    tmp_path: Path, content_type: str
) -> None:
    server = RawServer(content_type, pieces=endless(b"a" * (1024 * 1024)))
    try:
        result = swival(server, tmp_path, preexec_fn=limit_memory)
    finally:
        server.close()
    crashed = "Traceback" in result.stderr or "MemoryError" in result.stderr
    record(
        "malformed output",
        f"provider: gigabytes without a line break ({content_type})",
        "swival",
        traceback=crashed,
    )
    assert not crashed, result.stderr[-2000:]
    assert result.returncode == 1
    assert "sent more than 16 MB without a line break, not a chat reply" in result.stderr


def test_invalid_utf8_in_the_stream_becomes_replacement_characters(tmp_path: Path) -> None:
    events = [
        b'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": '
        b'"caf\xe9 \xed\xa0\x80 ok"}}]}',
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}',
        b"data: [DONE]",
    ]
    server = RawServer("text/event-stream", b"\n\n".join(events) + b"\n\n")
    try:
        result = swival(server, tmp_path)
    finally:
        server.close()
    record(
        "malformed output",
        "provider: invalid UTF-8 in the stream",
        "swival",
        traceback="Traceback" in result.stderr,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.strip() == "caf\ufffd \ufffd\ufffd\ufffd ok"


def test_lines_end_at_any_line_break_even_across_pieces() -> None:
    pieces = [b"data: a\r", b"\ndata: b\rdata: c\r\n", b"\xff d", b"\n\n", b"tail\r"]
    assert list(body_lines(pieces)) == ["data: a", "data: b", "data: c", "\ufffd d", "", "tail"]


def test_the_line_and_body_limits_hold() -> None:
    with pytest.raises(BodyTooLarge, match="without a line break"):
        list(body_lines([b"x" * 10] * 5, max_line=25))
    with pytest.raises(BodyTooLarge, match="a reply of more than"):
        list(body_lines([b"x\n" * 10] * 5, max_body=60))
    assert len(list(body_lines([b"x" * 10 + b"\n"] * 5, max_line=25))) == 5
