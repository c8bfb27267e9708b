"""list_files and grep: caps, globs, binary skipping, and .gitignore handling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.ignore import RuleSet, compile_glob, expand_braces, is_ignored, parse_gitignore
from swival.tools.registry import ToolRegistry


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", name, args), ctx)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


# --- gitignore rules ---------------------------------------------------------------

def ignored(text: str, rel: str, is_dir: bool = False) -> bool:
    base = Path("/r")
    return is_ignored(base / rel, is_dir, (RuleSet(base, tuple(parse_gitignore(text))),))


@pytest.mark.parametrize(("rules", "path", "is_dir", "expected"), [
    ("*.log", "a.log", False, True),
    ("*.log", "deep/down/a.log", False, True),
    ("*.log", "a.log.txt", False, False),
    ("build/", "build", True, True),
    ("build/", "build", False, False),          # dir-only rule, a file named build
    ("build/", "src/build", True, True),        # no inner slash: any depth
    ("/build", "build", True, True),
    ("/build", "src/build", True, False),       # leading slash anchors
    ("doc/*.md", "doc/a.md", False, True),
    ("doc/*.md", "x/doc/a.md", False, False),   # inner slash anchors too
    ("doc/*.md", "doc/sub/a.md", False, False),  # * does not cross /
    ("**/cache", "a/b/cache", True, True),
    ("**/cache", "cache", True, True),
    ("logs/**", "logs/x/y.txt", False, True),
    ("a/**/z", "a/z", False, True),
    ("a/**/z", "a/b/c/z", False, True),
    ("*.log\n!keep.log", "keep.log", False, False),
    ("*.log\n!keep.log", "drop.log", False, True),
    ("!keep.log\n*.log", "keep.log", False, True),  # last match wins
    ("# comment\n\n", "comment", False, False),
    ("\\#hash", "#hash", False, True),
    ("file?.txt", "file1.txt", False, True),
    ("file[0-9].txt", "fileA.txt", False, False),
    ("file[!0-9].txt", "fileA.txt", False, True),
    ("trailing.txt   ", "trailing.txt", False, True),
])
def test_gitignore_syntax(rules: str, path: str, is_dir: bool, expected: bool) -> None:
    assert ignored(rules, path, is_dir) is expected


def test_glob_helpers() -> None:
    assert expand_braces("*.{py,md}") == ["*.py", "*.md"]
    assert compile_glob("*.py").match("a/b/c.py")
    assert compile_glob("src/*.py").match("src/c.py")
    assert not compile_glob("src/*.py").match("src/x/c.py")
    assert compile_glob("**/*.py").match("c.py")
    assert compile_glob("*.{py,ts}").match("x/y.ts")


# --- list_files -----------------------------------------------------------------

def test_list_children_marks_dirs_and_skips_ignored(ctx: ToolContext) -> None:
    write(ctx.root, {
        ".gitignore": "node_modules/\n*.pyc\n",
        "a.py": "", "a.pyc": "", "src/b.py": "", "node_modules/x/index.js": "",
        ".git/HEAD": "", ".swival/out/x.txt": "",
    })
    result = call(ctx, "list_files")
    assert result.content.splitlines() == [".gitignore", "a.py", "src/"]
    assert dict(result.meta) == {"kind": "listing", "path": ".", "count": 3}


def test_list_pattern_recursive_relative_to_root(ctx: ToolContext) -> None:
    write(ctx.root, {"src/a.py": "", "src/deep/b.py": "", "src/c.txt": "", "d.py": "",
                     ".gitignore": "gen/\n", "src/gen/g.py": ""})
    assert call(ctx, "list_files", pattern="**/*.py").content.splitlines() == [
        "d.py", "src/a.py", "src/deep/b.py"]
    result = call(ctx, "list_files", path="src", pattern="*.py")
    assert result.content.splitlines() == ["src/a.py", "src/deep/b.py"]
    assert result.meta["path"] == "src"
    assert call(ctx, "list_files", path="src", pattern="deep/*").content == "src/deep/b.py"


def test_nested_gitignore_and_negation(ctx: ToolContext) -> None:
    write(ctx.root, {
        ".gitignore": "*.tmp\n",
        "pkg/.gitignore": "!keep.tmp\nlocal/\n",
        "pkg/keep.tmp": "", "pkg/drop.tmp": "", "pkg/local/x.py": "", "local/y.py": "",
        "top.tmp": "",
    })
    listed = call(ctx, "list_files", pattern="**/*").content.splitlines()
    assert "pkg/keep.tmp" in listed
    assert "pkg/drop.tmp" not in listed and "top.tmp" not in listed
    assert "pkg/local/" not in listed and "pkg/local/x.py" not in listed
    assert "local/y.py" in listed  # the nested rule only covers its own subtree


def test_gitignore_above_the_listed_directory_applies(ctx: ToolContext) -> None:
    write(ctx.root, {".gitignore": "*.gen.py\n", "a/b/x.gen.py": "", "a/b/x.py": ""})
    assert call(ctx, "list_files", path="a/b").content == "a/b/x.py"


def test_ignored_directory_listed_explicitly(ctx: ToolContext) -> None:
    write(ctx.root, {".gitignore": "vendor/\n", "vendor/lib.py": ""})
    assert call(ctx, "list_files", path="vendor").content == "vendor/lib.py"


def test_list_cap_100_with_count_and_hint(ctx: ToolContext) -> None:
    write(ctx.root, {f"f{i:03d}.txt": "" for i in range(250)})
    result = call(ctx, "list_files")
    lines = result.content.splitlines()
    assert len(lines) == 101 and lines[0] == "f000.txt" and lines[99] == "f099.txt"
    assert lines[100].startswith("[150 more entries not shown; narrow with")
    assert "pattern" in lines[100]
    assert result.meta["count"] == 250


def test_list_errors(ctx: ToolContext) -> None:
    write(ctx.root, {"a.py": ""})
    assert "is a file, not a directory" in call(ctx, "list_files", path="a.py").content
    assert "does not exist" in call(ctx, "list_files", path="nope").content
    empty = call(ctx, "list_files", pattern="*.rs")
    assert not empty.is_error and empty.content == "No files match '*.rs' under .."


def test_symlinked_dir_is_listed_not_entered(ctx: ToolContext) -> None:
    write(ctx.root, {"real/a.py": ""})
    (ctx.root / "loop").symlink_to(ctx.root, target_is_directory=True)
    listed = call(ctx, "list_files", pattern="**/*").content.splitlines()
    assert listed == ["loop/", "real/", "real/a.py"]


# --- grep -----------------------------------------------------------------------

def test_grep_format_and_meta(ctx: ToolContext) -> None:
    write(ctx.root, {"a.py": "import os\nx = 1\n", "sub/b.py": "   import sys\n"})
    result = call(ctx, "grep", pattern=r"^\s*import")
    assert result.content.splitlines() == ["a.py:1: import os", "sub/b.py:1: import sys"]
    assert dict(result.meta) == {"kind": "matches", "pattern": r"^\s*import", "path": ".",
                                 "matches": 2}


def test_grep_include_case_and_path(ctx: ToolContext) -> None:
    write(ctx.root, {"a.py": "TODO one\n", "b.md": "todo two\n", "s/c.py": "todo three\n"})
    assert call(ctx, "grep", pattern="todo", include="*.py").content == "s/c.py:1: todo three"
    both = call(ctx, "grep", pattern="todo", include="*.py", case_insensitive=True)
    assert both.meta["matches"] == 2
    assert call(ctx, "grep", pattern="todo", path="b.md").content == "b.md:1: todo two"
    assert call(ctx, "grep", pattern="todo", path="s").meta["matches"] == 1
    assert call(ctx, "grep", pattern="t", include="*.{md,txt}").meta["matches"] == 1


def test_grep_skips_binary_and_ignored(ctx: ToolContext) -> None:
    write(ctx.root, {".gitignore": "dist/\n", "dist/x.js": "needle\n", "ok.txt": "needle\n"})
    (ctx.root / "img.bin").write_bytes(b"needle\x00\x01")
    result = call(ctx, "grep", pattern="needle")
    assert result.content == "ok.txt:1: needle"


def test_grep_cap_100_and_total(ctx: ToolContext) -> None:
    write(ctx.root, {"a.txt": "hit\n" * 150, "b.txt": "hit\n" * 50})
    result = call(ctx, "grep", pattern="hit")
    lines = result.content.splitlines()
    assert len(lines) == 101
    assert lines[99] == "a.txt:100: hit"
    assert lines[100].startswith("[100 of 200 matches in 2 files shown; narrow")
    assert result.meta["matches"] == 200


def test_grep_long_line_is_cut_around_match(ctx: ToolContext) -> None:
    write(ctx.root, {"m.js": "a" * 3000 + "NEEDLE" + "b" * 3000 + "\n"})
    line = call(ctx, "grep", pattern="NEEDLE").content
    assert "NEEDLE" in line and len(line) < 260
    assert line.startswith("m.js:1: …") and line.endswith("…")


def test_grep_errors_and_no_match(ctx: ToolContext) -> None:
    write(ctx.root, {"a.txt": "x\n"})
    bad = call(ctx, "grep", pattern="foo(")
    assert bad.is_error and "invalid regex 'foo('" in bad.content and "backslash" in bad.content
    none = call(ctx, "grep", pattern="zzz")
    assert not none.is_error and none.content == "No matches for 'zzz' in .."
    assert none.meta["matches"] == 0
    assert "does not exist" in call(ctx, "grep", pattern="x", path="nope").content


def test_grep_anchors_work_per_line_with_crlf(ctx: ToolContext) -> None:
    (ctx.root / "w.txt").write_bytes(b"alpha\r\nbeta end\r\n")
    assert call(ctx, "grep", pattern="end$").content == "w.txt:2: beta end"
    assert call(ctx, "grep", pattern="^beta").content == "w.txt:2: beta end"
    assert call(ctx, "grep", pattern=r"(?<=be)ta").content == "w.txt:2: beta end"
