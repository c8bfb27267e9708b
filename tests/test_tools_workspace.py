"""The workspace sandbox: every way out of the allowed roots is refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.registry import ToolRegistry
from tests.evidence import record


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", name, args), ctx)


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    extra = tmp_path / "extra"
    ro = tmp_path / "reference"
    for d in (root, outside, extra, ro):
        d.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (root / "inside.txt").write_text("hello\n")
    (extra / "e.txt").write_text("extra\n")
    (ro / "r.txt").write_text("reference\n")
    return {"root": root, "outside": outside, "extra": extra, "ro": ro}


@pytest.fixture
def ctx(layout: dict[str, Path]) -> ToolContext:
    return ToolContext(root=layout["root"], extra_dirs=(layout["extra"],),
                       read_only_dirs=(layout["ro"],))


def assert_refused(result: ToolResult, outside: Path) -> None:
    record("path escape", result.content[:80], "in-process",
           escaped=not result.is_error or "top secret" in result.content)
    assert result.is_error
    assert "outside the workspace" in result.content or "read-only" in result.content
    assert "Allowed:" in result.content
    assert "top secret" not in result.content


def test_dotdot_read_is_refused(ctx: ToolContext, layout: dict[str, Path]) -> None:
    result = call(ctx, "read_file", file_path="../outside/secret.txt")
    assert_refused(result, layout["outside"])
    assert str(layout["root"]) in result.content  # names the allowed roots


def test_absolute_read_is_refused(ctx: ToolContext, layout: dict[str, Path]) -> None:
    result = call(ctx, "read_file", file_path=str(layout["outside"] / "secret.txt"))
    assert_refused(result, layout["outside"])


def test_symlink_to_outside_file_read_and_write(ctx: ToolContext, layout: dict[str, Path]) -> None:
    link = layout["root"] / "link.txt"
    link.symlink_to(layout["outside"] / "secret.txt")
    assert_refused(call(ctx, "read_file", file_path="link.txt"), layout["outside"])
    result = call(ctx, "write_file", file_path="link.txt", content="pwned")
    assert_refused(result, layout["outside"])
    assert (layout["outside"] / "secret.txt").read_text() == "top secret\n"


def test_symlinked_parent_directory(ctx: ToolContext, layout: dict[str, Path]) -> None:
    (layout["root"] / "door").symlink_to(layout["outside"], target_is_directory=True)
    assert_refused(call(ctx, "read_file", file_path="door/secret.txt"), layout["outside"])
    result = call(ctx, "write_file", file_path="door/new.txt", content="x")
    assert_refused(result, layout["outside"])
    assert not (layout["outside"] / "new.txt").exists()
    assert_refused(call(ctx, "list_files", path="door"), layout["outside"])
    assert_refused(call(ctx, "grep", pattern="secret", path="door"), layout["outside"])


def test_dangling_symlink_to_outside_cannot_create(ctx: ToolContext,
                                                   layout: dict[str, Path]) -> None:
    (layout["root"] / "trap.txt").symlink_to(layout["outside"] / "created.txt")
    result = call(ctx, "write_file", file_path="trap.txt", content="x")
    assert_refused(result, layout["outside"])
    assert not (layout["outside"] / "created.txt").exists()


def test_edit_outside_is_refused(ctx: ToolContext, layout: dict[str, Path]) -> None:
    result = call(ctx, "edit_file", file_path="../outside/secret.txt",
                  old_string="top", new_string="bottom")
    assert_refused(result, layout["outside"])
    assert (layout["outside"] / "secret.txt").read_text() == "top secret\n"


def test_dotdot_inside_root_is_fine(ctx: ToolContext, layout: dict[str, Path]) -> None:
    (layout["root"] / "sub").mkdir()
    result = call(ctx, "read_file", file_path="sub/../inside.txt")
    assert not result.is_error
    assert result.meta["path"] == "inside.txt"


def test_extra_dir_is_read_write(ctx: ToolContext, layout: dict[str, Path]) -> None:
    target = layout["extra"] / "new.txt"
    result = call(ctx, "write_file", file_path=str(target), content="ok\n")
    assert not result.is_error, result.content
    assert target.read_text() == "ok\n"
    # Paths outside the root are shown absolute.
    assert result.meta["path"] == target.as_posix()


def test_read_only_dir_reads_but_refuses_writes(ctx: ToolContext,
                                                layout: dict[str, Path]) -> None:
    ref = layout["ro"] / "r.txt"
    assert call(ctx, "read_file", file_path=str(ref)).content.endswith("reference")
    result = call(ctx, "write_file", file_path=str(ref), content="changed")
    assert result.is_error and "read-only directory" in result.content
    result = call(ctx, "edit_file", file_path=str(ref), old_string="reference",
                  new_string="changed")
    assert result.is_error and "read-only directory" in result.content
    assert ref.read_text() == "reference\n"


def test_git_directory_is_never_written(ctx: ToolContext, layout: dict[str, Path]) -> None:
    git = layout["root"] / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n")
    assert not call(ctx, "read_file", file_path=".git/config").is_error
    for path in (".git/config", ".git/hooks/pre-commit", "sub/../.git/HEAD"):
        result = call(ctx, "write_file", file_path=path, content="x")
        assert result.is_error and ".git directory" in result.content, path
    assert not (git / "hooks").exists()
    assert (git / "config").read_text() == "[core]\n"


def test_symlink_into_git_is_refused(ctx: ToolContext, layout: dict[str, Path]) -> None:
    (layout["root"] / ".git").mkdir()
    (layout["root"] / "hooks").symlink_to(layout["root"] / ".git", target_is_directory=True)
    result = call(ctx, "write_file", file_path="hooks/post-checkout", content="x")
    assert result.is_error and ".git directory" in result.content


def test_empty_path_is_a_clear_error(ctx: ToolContext) -> None:
    result = call(ctx, "read_file", file_path="  ")
    assert result.is_error and "path is empty" in result.content


def test_grep_does_not_follow_file_symlink_outside(ctx: ToolContext,
                                                   layout: dict[str, Path]) -> None:
    (layout["root"] / "leak.txt").symlink_to(layout["outside"] / "secret.txt")
    result = call(ctx, "grep", pattern="secret")
    assert "top secret" not in result.content
    assert result.meta["matches"] == 0


def test_root_given_as_symlink_still_works(tmp_path: Path, layout: dict[str, Path]) -> None:
    alias = tmp_path / "alias"
    os.symlink(layout["root"], alias)
    ctx = ToolContext(root=alias)
    result = call(ctx, "read_file", file_path="inside.txt")
    assert not result.is_error and result.meta["path"] == "inside.txt"
