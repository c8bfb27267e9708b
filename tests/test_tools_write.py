"""write_file and edit_file: atomic writes, permissions, stale-read guard, edit errors."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.render.lines import outcome
from swival.tools.atomic import atomic_write
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.files import capped_diff
from swival.tools.registry import ToolRegistry


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", name, args), ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


def make(ctx: ToolContext, rel: str, text: str, *, read: bool = True) -> Path:
    path = ctx.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if read:
        assert not call(ctx, "read_file", file_path=rel).is_error
    return path


def bump(path: Path, text: str) -> None:
    """Change a file behind the model's back (and make sure its mtime moves)."""
    st = path.stat()
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


# --- write_file ---------------------------------------------------------------------

def test_create_new_file_with_parents(ctx: ToolContext) -> None:
    result = call(ctx, "write_file", file_path="a/b/new.py", content="x = 1\n")
    assert not result.is_error
    assert result.content == "Created a/b/new.py (1 line)."
    assert (ctx.root / "a/b/new.py").read_text() == "x = 1\n"
    assert result.meta["changed"] == [["a/b/new.py", "created"]]
    assert result.meta["kind"] == "write" and result.meta["lines"] == 1
    assert "+x = 1" in result.meta["diff"]


def test_new_file_gets_umask_permissions(ctx: ToolContext) -> None:
    old = os.umask(0o027)
    try:
        call(ctx, "write_file", file_path="p.txt", content="x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((ctx.root / "p.txt").stat().st_mode) == 0o640


def test_overwrite_requires_a_read(ctx: ToolContext) -> None:
    path = make(ctx, "a.txt", "old\n", read=False)
    result = call(ctx, "write_file", file_path="a.txt", content="new\n")
    assert result.is_error
    assert "you have not read it in this session. Call read_file on a.txt first" in (
        result.content)
    assert outcome(result) == "not written: a.txt exists and was not read in this session"
    assert path.read_text() == "old\n"


def test_overwrite_after_read_keeps_permissions(ctx: ToolContext) -> None:
    path = make(ctx, "run.sh", "#!/bin/sh\necho 1\n")
    path.chmod(0o751)
    call(ctx, "read_file", file_path="run.sh", offset=2)  # chmod changed nothing we compare
    result = call(ctx, "write_file", file_path="run.sh", content="#!/bin/sh\necho 2\n")
    assert not result.is_error, result.content
    assert result.meta["changed"] == [["run.sh", "modified"]]
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert "-echo 1" in result.meta["diff"] and "+echo 2" in result.meta["diff"]


def test_stale_file_is_refused(ctx: ToolContext) -> None:
    path = make(ctx, "a.txt", "v1\n")
    bump(path, "v2 from the user\n")
    for name, args in (("write_file", {"content": "v3\n"}),
                       ("edit_file", {"old_string": "v2", "new_string": "v3"})):
        result = call(ctx, name, file_path="a.txt", **args)
        assert result.is_error
        assert "a.txt changed on disk since you last read it" in result.content
        assert "read_file" in result.content
        # the person's line says what happened, without the model's instructions
        assert outcome(result) == "not written: a.txt changed on disk since it was read"
    assert path.read_text() == "v2 from the user\n"


def test_consecutive_edits_need_no_reread(ctx: ToolContext) -> None:
    path = make(ctx, "a.py", "a = 1\nb = 2\n")
    assert not call(ctx, "edit_file", file_path="a.py", old_string="a = 1",
                    new_string="a = 10").is_error
    assert not call(ctx, "edit_file", file_path="a.py", old_string="b = 2",
                    new_string="b = 20").is_error
    assert not call(ctx, "write_file", file_path="a.py", content="c = 3\n").is_error
    assert path.read_text() == "c = 3\n"


def test_write_into_directory_path_is_refused(ctx: ToolContext) -> None:
    (ctx.root / "d").mkdir()
    result = call(ctx, "write_file", file_path="d", content="x")
    assert result.is_error and "is a directory" in result.content


def test_atomic_write_leaves_no_temp_and_original_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("original")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(target, "bad \udc80 surrogate")
    assert target.read_text() == "original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_write_failure_is_reported_and_file_untouched(ctx: ToolContext) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    path = make(ctx, "locked/a.txt", "old\n")
    path.parent.chmod(0o555)
    try:
        result = call(ctx, "write_file", file_path="locked/a.txt", content="new\n")
    finally:
        path.parent.chmod(0o755)
    assert result.is_error and "could not write locked/a.txt" in result.content
    assert path.read_text() == "old\n"


def test_write_blocked_by_a_file_in_the_way(ctx: ToolContext) -> None:
    (ctx.root / "f").write_text("a file, not a directory")
    result = call(ctx, "write_file", file_path="f/x.txt", content="new\n")
    assert result.is_error and "could not write f/x.txt" in result.content
    assert "left unchanged" in result.content
    assert (ctx.root / "f").read_text() == "a file, not a directory"


def test_diff_is_capped() -> None:
    diff = capped_diff("", "".join(f"line {i}\n" for i in range(2000)), "big.txt")
    assert len(diff) <= 4096 + 20 and diff.endswith("… [diff cut]\n")


# --- edit_file ----------------------------------------------------------------------

def test_edit_once(ctx: ToolContext) -> None:
    path = make(ctx, "a.py", "def f():\n    return 1\n")
    result = call(ctx, "edit_file", file_path="a.py", old_string="return 1",
                  new_string="return 2")
    assert result.content == "Edited a.py (at line 2; now 2 lines)."
    assert path.read_text() == "def f():\n    return 2\n"
    assert result.meta["kind"] == "edit"
    assert result.meta["changed"] == [["a.py", "modified"]]
    assert "-    return 1\n+    return 2\n" in result.meta["diff"]


def test_edit_found_many_times(ctx: ToolContext) -> None:
    path = make(ctx, "a.py", "x = 0\ny = 1\nx = 0\n\nx = 0\n")
    result = call(ctx, "edit_file", file_path="a.py", old_string="x = 0", new_string="x = 9")
    assert result.is_error
    assert "old_string occurs 3 times in a.py (lines 1, 3, 5)" in result.content
    assert "replace_all=true" in result.content and "more surrounding lines" in result.content
    assert path.read_text() == "x = 0\ny = 1\nx = 0\n\nx = 0\n"
    done = call(ctx, "edit_file", file_path="a.py", old_string="x = 0", new_string="x = 9",
                replace_all=True)
    assert done.content == "Edited a.py (3 replacements; now 5 lines)."
    assert path.read_text().count("x = 9") == 3


def test_edit_not_found_plain(ctx: ToolContext) -> None:
    make(ctx, "a.py", "alpha\n")
    result = call(ctx, "edit_file", file_path="a.py", old_string="beta", new_string="gamma")
    assert result.is_error
    assert "old_string was not found in a.py" in result.content
    assert "read_file" in result.content


def test_edit_not_found_but_whitespace_match(ctx: ToolContext) -> None:
    make(ctx, "a.py", "class A:\n    def f(self):\n        return 1\n")
    result = call(ctx, "edit_file", file_path="a.py",
                  old_string="def f(self):\n    return 1", new_string="pass")
    assert result.is_error
    assert "Ignoring whitespace, it matches line 2" in result.content


def test_edit_with_line_number_prefixes_gets_hint(ctx: ToolContext) -> None:
    make(ctx, "a.py", "a = 1\nb = 2\n")
    result = call(ctx, "edit_file", file_path="a.py", old_string="1\ta = 1\n2\tb = 2",
                  new_string="x")
    assert result.is_error and "include the line numbers" in result.content


def test_edit_argument_errors(ctx: ToolContext) -> None:
    make(ctx, "a.py", "a\n")
    same = call(ctx, "edit_file", file_path="a.py", old_string="a", new_string="a")
    assert same.is_error and "are the same" in same.content
    empty = call(ctx, "edit_file", file_path="a.py", old_string="", new_string="b")
    assert empty.is_error and "old_string is empty" in empty.content
    missing = call(ctx, "edit_file", file_path="b.py", old_string="a", new_string="b")
    assert missing.is_error and "b.py does not exist. Use write_file" in missing.content


def test_edit_requires_read(ctx: ToolContext) -> None:
    path = make(ctx, "a.py", "a\n", read=False)
    result = call(ctx, "edit_file", file_path="a.py", old_string="a", new_string="b")
    assert result.is_error and "not read it" in result.content
    assert path.read_text() == "a\n"


def test_edit_keeps_crlf(ctx: ToolContext) -> None:
    path = ctx.root / "w.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    call(ctx, "read_file", file_path="w.txt")
    result = call(ctx, "edit_file", file_path="w.txt", old_string="one\ntwo",
                  new_string="1\n2")
    assert not result.is_error, result.content
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_keeps_permissions(ctx: ToolContext) -> None:
    path = make(ctx, "x.sh", "echo a\n")
    path.chmod(0o700)
    call(ctx, "read_file", file_path="x.sh")
    call(ctx, "edit_file", file_path="x.sh", old_string="a", new_string="b")
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_edit_binary_refused(ctx: ToolContext) -> None:
    path = ctx.root / "b.bin"
    path.write_bytes(b"abc\x00def")
    st = path.stat()
    ctx.read_files[path.resolve()] = (st.st_mtime_ns, st.st_size)
    result = call(ctx, "edit_file", file_path="b.bin", old_string="abc", new_string="x")
    assert result.is_error and "binary file" in result.content


def test_edit_through_symlink_inside_root_edits_target(ctx: ToolContext) -> None:
    target = make(ctx, "real.py", "v = 1\n")
    (ctx.root / "alias.py").symlink_to(target)
    result = call(ctx, "edit_file", file_path="alias.py", old_string="1", new_string="2")
    assert not result.is_error, result.content
    assert (ctx.root / "alias.py").is_symlink()
    assert target.read_text() == "v = 2\n"
