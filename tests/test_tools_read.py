"""read_file: numbering, paging, the 50 KB and 2,000-character caps, refusals."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.read_file import MAX_BYTES
from swival.tools.registry import ToolRegistry


def read(ctx: ToolContext, **args: Any) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", "read_file", args), ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


def test_numbered_lines_and_meta(ctx: ToolContext) -> None:
    (ctx.root / "a.py").write_text("one\ntwo\nthree\n")
    result = read(ctx, file_path="a.py")
    assert result.content == "1\tone\n2\ttwo\n3\tthree"
    assert dict(result.meta) == {"kind": "file", "path": "a.py", "lines": 3, "offset": 1,
                                 "shown": 3, "continue": "read_file file_path=a.py offset={line}"}


def test_offset_and_limit_page_with_a_note(ctx: ToolContext) -> None:
    (ctx.root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = read(ctx, file_path="a.txt", offset=10, limit=5)
    lines = result.content.splitlines()
    assert lines[:5] == [f"{i}\tline {i}" for i in range(10, 15)]
    assert lines[5] == "[lines 10-14 of 100; to continue, call read_file with offset=15]"
    assert result.meta["offset"] == 10 and result.meta["shown"] == 5
    assert result.meta["lines"] == 100


def test_numbers_are_padded_to_the_widest_shown(ctx: ToolContext) -> None:
    (ctx.root / "a.txt").write_text("x\n" * 12)
    content = read(ctx, file_path="a.txt", offset=8).content
    assert content.splitlines()[0] == " 8\tx"
    assert content.splitlines()[-1] == "12\tx"


def test_byte_cap_stops_at_50_kb_and_says_how_to_continue(ctx: ToolContext) -> None:
    (ctx.root / "big.txt").write_text("".join(f"{i:06d} " + "x" * 93 + "\n" for i in range(5000)))
    result = read(ctx, file_path="big.txt")
    assert len(result.content.encode()) <= MAX_BYTES + 200
    shown = result.meta["shown"]
    assert 400 < shown < 520
    note = result.content.splitlines()[-1]
    assert note == (f"[lines 1-{shown} of 5000 (50 KB per call); "
                    f"to continue, call read_file with offset={shown + 1}]")
    following = read(ctx, file_path="big.txt", offset=shown + 1, limit=1)
    assert following.content.startswith(f"{shown + 1}\t{shown:06d} ")


def test_long_lines_are_cut_with_a_marker(ctx: ToolContext) -> None:
    (ctx.root / "min.js").write_text("a" * 5000 + "\nshort\n")
    content = read(ctx, file_path="min.js").content
    first, second = content.splitlines()
    assert first == "1\t" + "a" * 2000 + "… [line cut: 5000 chars]"
    assert second == "2\tshort"


def test_huge_single_line_is_read_in_bounded_form(ctx: ToolContext) -> None:
    (ctx.root / "one.txt").write_text("é" * 3_000_000)  # 6 MB, no newline
    result = read(ctx, file_path="one.txt")
    assert result.meta["lines"] == 1
    assert "… [line cut: " in result.content
    assert len(result.content) < 2100


def test_crlf_is_not_shown(ctx: ToolContext) -> None:
    (ctx.root / "w.txt").write_bytes(b"a\r\nb\r\n")
    assert read(ctx, file_path="w.txt").content == "1\ta\n2\tb"


def test_last_line_without_newline_counts(ctx: ToolContext) -> None:
    (ctx.root / "n.txt").write_text("a\nb")
    result = read(ctx, file_path="n.txt")
    assert result.meta["lines"] == 2 and result.content == "1\ta\n2\tb"


def test_empty_file(ctx: ToolContext) -> None:
    (ctx.root / "e.txt").write_text("")
    result = read(ctx, file_path="e.txt")
    assert not result.is_error and result.content == "(empty file)"


def test_offset_past_end(ctx: ToolContext) -> None:
    (ctx.root / "a.txt").write_text("1\n2\n")
    result = read(ctx, file_path="a.txt", offset=9)
    assert result.is_error
    assert "offset 9 is past the end of a.txt, which has 2 lines" in result.content


def test_bad_offset_and_limit(ctx: ToolContext) -> None:
    (ctx.root / "a.txt").write_text("1\n")
    assert "1-based" in read(ctx, file_path="a.txt", offset=-3).content
    assert "limit must be at least 1" in read(ctx, file_path="a.txt", limit=0).content


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\x00\x00\x00", b"abc\xff\xfe\xfd\n"])
def test_binary_files_are_refused(ctx: ToolContext, data: bytes) -> None:
    (ctx.root / "blob.bin").write_bytes(data)
    result = read(ctx, file_path="blob.bin")
    assert result.is_error
    assert "blob.bin is a binary file" in result.content
    assert "run_command" in result.content


def test_directory_is_refused_with_hint(ctx: ToolContext) -> None:
    (ctx.root / "src").mkdir()
    result = read(ctx, file_path="src")
    assert result.is_error and "is a directory; use list_files" in result.content


def test_missing_file(ctx: ToolContext) -> None:
    result = read(ctx, file_path="nope.py")
    assert result.is_error and "nope.py does not exist" in result.content


def test_read_records_fingerprint(ctx: ToolContext) -> None:
    path = ctx.root / "a.txt"
    path.write_text("abc\n")
    read(ctx, file_path="a.txt", limit=1)
    st = path.stat()
    assert ctx.read_files[path.resolve()] == (st.st_mtime_ns, st.st_size)


def test_utf8_split_at_cut_point_is_tolerated(ctx: ToolContext) -> None:
    (ctx.root / "u.txt").write_text("€" * 4000 + "\n")  # 3-byte characters
    content = read(ctx, file_path="u.txt").content
    assert re.fullmatch(r"1\t€{2000}… \[line cut: 12000 bytes\]", content)
