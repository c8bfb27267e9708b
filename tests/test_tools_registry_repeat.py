"""The repeated-call guard with the real tools: an edit in between resets it."""

from __future__ import annotations

from pathlib import Path

from swival.messages import ToolCall
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.registry import ToolRegistry


def test_read_edit_cycles_are_not_mistaken_for_a_loop(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("v0\n")
    ctx = ToolContext(root=tmp_path)
    registry = ToolRegistry(core_tools())
    read = ToolCall("r", "read_file", {"file_path": "a.txt"})
    for i in range(4):
        assert not registry.run(read, ctx).is_error, i
        edit = ToolCall("e", "edit_file", {"file_path": "a.txt", "old_string": f"v{i}",
                                           "new_string": f"v{i + 1}"})
        assert not registry.run(edit, ctx).is_error
    assert (tmp_path / "a.txt").read_text() == "v4\n"


def test_identical_reads_without_change_are_still_stopped(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    ctx = ToolContext(root=tmp_path)
    registry = ToolRegistry(core_tools())
    read = ToolCall("r", "read_file", {"file_path": "a.txt"})
    assert not registry.run(read, ctx).is_error
    assert not registry.run(read, ctx).is_error
    third = registry.run(read, ctx)
    assert third.is_error and "already made 2 times" in third.content
