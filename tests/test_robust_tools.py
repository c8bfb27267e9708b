"""No tool argument or workspace content can hang or crash a tool: special files, time
budgets, inputs that made the old code quadratic, and text that cannot be encoded."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from swival.context.transcript import Transcript, replay
from swival.messages import Message, ToolCall, ToolResult, clean_arguments
from swival.tools.base import Tool, ToolContext
from swival.tools.core import core_tools
from swival.tools.grep import Grep
from swival.tools.ignore import expand_braces, parse_gitignore
from swival.tools.list_files import ListFiles
from swival.tools.patterns import MAX_UNROLLED, unrolled_size
from swival.tools.read_file import ReadFile
from swival.tools.registry import ToolRegistry
from swival.tools.regular import NotRegularFile, open_regular
from tests.evidence import record


def run(ctx: ToolContext, name: str, tools: list[Tool] | None = None,
        **args: Any) -> ToolResult:
    return ToolRegistry(tools or core_tools()).run(ToolCall("c1", name, args), ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    os.mkfifo(tmp_path / "pipe")
    return ToolContext(root=tmp_path)


# --- special files: refused or skipped, never opened for reading ----------------------

@pytest.mark.timeout(30)
@pytest.mark.parametrize(("tool", "args"), [
    ("read_file", {"file_path": "pipe"}),
    ("write_file", {"file_path": "pipe", "content": "x"}),
    ("edit_file", {"file_path": "pipe", "old_string": "a", "new_string": "b"}),
    ("grep", {"pattern": "a", "path": "pipe"}),
])
def test_a_fifo_is_refused_by_name(ctx: ToolContext, tool: str, args: dict[str, Any]) -> None:
    result = run(ctx, tool, **args)
    record("hang", f"{tool} on a FIFO", "in-process", hung=False)
    assert result.is_error
    assert result.content.startswith("error: pipe is a named pipe (FIFO), not a regular file")
    assert (ctx.root / "pipe").is_fifo()  # write_file did not replace it


@pytest.mark.timeout(30)
def test_no_tool_opens_a_fifo(ctx: ToolContext) -> None:
    """A writer blocks in open() until some reader opens the pipe: it must stay blocked
    through every tool call (opening with O_NONBLOCK would release it too)."""
    pipe = ctx.root / "pipe"
    opened = threading.Event()

    def writer() -> None:
        with open(pipe, "wb"):
            opened.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    time.sleep(0.5)  # let the writer reach open() and block there
    run(ctx, "read_file", file_path="pipe")
    run(ctx, "write_file", file_path="pipe", content="x")
    run(ctx, "edit_file", file_path="pipe", old_string="a", new_string="b")
    run(ctx, "grep", pattern="a")
    run(ctx, "grep", pattern="a", path="pipe")
    run(ctx, "list_files", pattern="**/*")
    assert not opened.wait(0.5), "a tool opened the pipe"
    release = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    thread.join(5)
    os.close(release)


def test_open_regular_never_blocks_on_a_fifo(ctx: ToolContext) -> None:
    with pytest.raises(NotRegularFile, match="named pipe"):
        open_regular(ctx.root / "pipe")
    with open_regular(ctx.root / "a.txt") as f:
        assert f.read() == b"alpha\nbeta\n"


@pytest.mark.timeout(30)
def test_grep_and_list_files_skip_a_fifo_and_say_so(ctx: ToolContext) -> None:
    found = run(ctx, "grep", pattern="a")
    assert found.content.splitlines()[0] == "a.txt:1: alpha"
    assert "1 special file (pipes, sockets or devices) skipped" in found.content
    listed = run(ctx, "list_files")
    assert listed.content.splitlines()[0] == "a.txt"
    assert "pipe" not in listed.content.splitlines()
    assert "1 special file" in listed.content
    assert "pipe" not in run(ctx, "list_files", pattern="*").content.splitlines()


@pytest.mark.timeout(30)
def test_a_gitignore_that_is_a_fifo_is_not_read(ctx: ToolContext) -> None:
    os.mkfifo(ctx.root / ".gitignore")
    assert run(ctx, "list_files", pattern="*.txt").content == "a.txt"
    assert run(ctx, "grep", pattern="beta").content.splitlines()[0] == "a.txt:2: beta"


# --- time budgets ---------------------------------------------------------------------

def test_grep_out_of_time_returns_what_it_has_with_a_note(ctx: ToolContext) -> None:
    result = run(ctx, "grep", [Grep(seconds=0)], pattern="alpha")
    assert not result.is_error
    assert "search stopped after 0 s" in result.content
    assert "narrow it with path or include" in result.content


def test_list_files_out_of_time_says_the_listing_is_incomplete(ctx: ToolContext) -> None:
    result = run(ctx, "list_files", [ListFiles(seconds=0)], pattern="**/*")
    assert "listing stopped after 0 s, so it is incomplete" in result.content


def test_read_file_out_of_time_says_how_to_read_instead(ctx: ToolContext) -> None:
    result = run(ctx, "read_file", [ReadFile(seconds=0)], file_path="a.txt", offset=2)
    assert result.is_error
    assert "too large to reach line 2" in result.content and "sed -n" in result.content


@pytest.mark.timeout(60)
def test_a_catastrophic_regex_is_stopped_and_named(ctx: ToolContext) -> None:
    (ctx.root / "slow.txt").write_text("a" * 40 + "b\n")
    result = run(ctx, "grep", pattern="(a|aa)+$")
    record("hang", "catastrophic regex (a|aa)+$", "in-process", hung=False)
    assert result.is_error
    assert "'(a|aa)+$' ran for more than 1 s on one line (slow.txt:1)" in result.content
    assert "avoid nested or overlapping repeats" in result.content


def test_grep_keeps_python_regex_syntax(ctx: ToolContext) -> None:
    found = run(ctx, "grep", pattern=r"(?P<w>b)eta", path="a.txt")
    assert found.content == "a.txt:2: beta"
    assert "invalid regex '(?R)'" in run(ctx, "grep", pattern="(?R)").content  # regex-only
    assert "invalid regex '\\\\p{L}'" in run(ctx, "grep", pattern=r"\p{L}").content


@pytest.mark.parametrize(("pattern", "size"), [
    ("abc", 3), (r"\d{4}-\d{2}", 7), ("a{1000}", 1000), ("a{,5}", 1), ("[]{}]{5}", 5),
    ("(?:a{1000}){1000}", 1_002_000), ("((((((a{10}){10}){10}){10}){10}){10})", 10**6),
])
def test_unrolled_size_multiplies_nested_counts(pattern: str, size: int) -> None:
    assert unrolled_size(pattern) == pytest.approx(size, rel=0.01)


def test_patterns_that_would_exhaust_memory_are_refused(ctx: ToolContext) -> None:
    nested = "(" * 10 + "a{10}" + "){10}" * 10
    result = run(ctx, "grep", pattern=nested)
    assert result.is_error and "too large" in result.content
    assert f"at most {MAX_UNROLLED:,}" in result.content


# --- inputs that made the old code quadratic or exponential ----------------------------

@pytest.mark.timeout(60)
def test_edit_file_reports_many_matches_without_rescanning(ctx: ToolContext) -> None:
    (ctx.root / "big.txt").write_text("a\n" * 300_000)
    assert not run(ctx, "read_file", file_path="big.txt").is_error
    result = run(ctx, "edit_file", file_path="big.txt", old_string="a", new_string="b")
    record("hang", "edit_file naming 300,000 matches", "in-process", hung=False)
    assert "old_string occurs 300000 times in big.txt (lines 1, 2, 3" in result.content


@pytest.mark.timeout(30)
def test_brace_groups_are_capped() -> None:
    assert expand_braces("{a,b}{c,d}") == ["ac", "ad", "bc", "bd"]
    with pytest.raises(Exception, match="more than 64 alternatives"):
        expand_braces("{a,b}" * 40)
    assert expand_braces("{" + "," * 50_000) == ["{" + "," * 50_000]
    record("hang", "globs with 40 brace groups and 50,000 commas", "in-process", hung=False)


@pytest.mark.timeout(30)
def test_gitignore_lines_that_backtracked_parse_at_once() -> None:
    assert parse_gitignore(" " * 100_000 + "x") == parse_gitignore(" " * 100_000 + "x")
    record("hang", ".gitignore line of 100,000 spaces", "in-process", hung=False)
    rules = parse_gitignore("[z-a]\n*.log\nfoo\\ \n")
    assert [r.glob.text for r in rules] == ["*.log", "foo\\ "]  # the bad rule is dropped


def test_paths_too_long_or_looping_are_refused(ctx: ToolContext) -> None:
    name_limit = "is too long: file names hold at most 255 bytes"
    assert name_limit in run(ctx, "read_file", file_path="a" * 300).content
    assert name_limit in run(ctx, "write_file", file_path="a/" * 2100, content="").content
    os.symlink("loop", ctx.root / "loop")
    assert "cannot be resolved" in run(ctx, "read_file", file_path="loop/x").content


# --- text that cannot be encoded --------------------------------------------------------

def test_a_lone_surrogate_refuses_the_call_and_nothing_is_written(ctx: ToolContext) -> None:
    call = ToolCall("c1", "write_file", {"file_path": "s.txt", "content": "x\ud800y"})
    assert call.arguments["content"] == "x\ufffdy"
    result = ToolRegistry(core_tools()).run(call, ctx)
    assert result.content.startswith(
        "error: write_file: argument `content` holds a lone surrogate (\\ud800 at character 1)")
    assert not (ctx.root / "s.txt").exists()


@pytest.mark.parametrize(("arguments", "problem"), [
    ({"n": float("inf")}, "argument `n` is inf; use a finite number"),
    ({"n": 2**64}, "argument `n` is out of range (a 65-bit integer)"),
    ({"n": json.loads("[" * 40 + "]" * 40)},
     "nested more than 32 levels deep"),
    ({"k\udc80": 1}, "an argument name holds a lone surrogate"),
])
def test_arguments_that_cannot_be_sent_on_are_named(arguments: dict[str, Any],
                                                    problem: str) -> None:
    cleaned, found = clean_arguments(arguments)
    assert found is not None and problem in found
    json.dumps(dict(cleaned), ensure_ascii=False, allow_nan=False).encode("utf-8")


def test_the_transcript_survives_line_separators_and_bad_metadata(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    transcript = Transcript(path)
    transcript.message(Message("user", "one\x85two\u2028three"))
    transcript.message(Message("tool", "ok", tool_call_id="c"), {"path": "caf\udce9.txt"})
    transcript.close()
    history = replay(path).history
    assert [m.content for m in history] == ["one\x85two\u2028three", "ok"]
    assert "caf\ufffd.txt" in path.read_text(encoding="utf-8")


@pytest.mark.timeout(60)
def test_the_diff_of_a_big_scattered_edit_is_computed_at_once(ctx: ToolContext) -> None:
    """difflib needs minutes for this (quadratic); the UI diff must not hold the turn."""
    lines = [f"line {i} of a generated file\n" for i in range(40_000)]
    (ctx.root / "gen.txt").write_text("".join(lines))
    run(ctx, "read_file", file_path="gen.txt")
    changed = [f"edited {i}\n" if i % 7 == 0 else line for i, line in enumerate(lines)]
    result = run(ctx, "write_file", file_path="gen.txt", content="".join(changed))
    record("hang", "diff of 5,700 scattered changes in 40,000 lines", "in-process",
           hung=False)
    assert not result.is_error, result.content
    diff = result.meta["diff"]
    assert diff.startswith("--- a/gen.txt\n+++ b/gen.txt\n@@ -1,1 +1,1 @@\n")
    assert "-line 7 of a generated file\n+edited 7\n" in diff and diff.endswith("[diff cut]\n")
