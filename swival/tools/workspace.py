"""The workspace sandbox: which paths the file tools may read and write.

A path is resolved first (relative to the project root, `..` collapsed, every symlink
followed) and only then compared with the allowed roots, so no spelling of a path and
no symlink can lead a tool outside them. Read/write roots are the project root and
`ctx.extra_dirs`; `ctx.read_only_dirs` may only be read. Nothing inside a `.git`
directory may be written, nor anything inside `.swival` (the harness's own state:
transcripts, the session's saved outputs, which the model may read but not forge), and
`.swival/undo` (the unredacted copies /undo restores) is not even read.

Names are compared as a case-insensitive file system sees them (`protected_part`):
`.GIT` and `.Swival` are the real directories on macOS and Windows, and so are names
with the code points HFS+ ignores (`.g\u200cit`) or, on Windows, trailing dots and spaces.

The check happens just before the file is opened; a symlink swapped in between the
check and the open by another process is outside what this guards against.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from swival.state import STATE_DIR, UNDO
from swival.tools.base import ToolContext, ToolError

PROTECTED_NAMES = (".git", STATE_DIR)  # never written by the model's tools or commands
# Code points HFS+ leaves out when it compares names (git's list for core.protectHFS).
HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
NAME_MAX = 255  # bytes in one file name (Linux and macOS)
PATH_MAX = 4096  # bytes in a whole path


def comparable(name: str) -> str:
    """A file name as a case-insensitive file system compares it."""
    return HFS_IGNORED.sub("", name).rstrip(". ").casefold()


def protected_part(parts: Iterable[str]) -> str | None:
    """The first of PROTECTED_NAMES that one of the path `parts` names, in any case."""
    wanted = {comparable(name): name for name in PROTECTED_NAMES}
    return next((wanted[comparable(p)] for p in parts if comparable(p) in wanted), None)


def writable_roots(ctx: ToolContext) -> tuple[Path, ...]:
    """The resolved directories tools may read and write."""
    return tuple(p.resolve() for p in (ctx.root, *ctx.extra_dirs))


def readable_roots(ctx: ToolContext) -> tuple[Path, ...]:
    """The resolved directories tools may read (writable ones first)."""
    return writable_roots(ctx) + tuple(p.resolve() for p in ctx.read_only_dirs)


def describe_roots(ctx: ToolContext) -> str:
    """A one-line list of the allowed roots, for error messages."""
    parts = [f"{p} (read/write)" for p in writable_roots(ctx)]
    parts += [f"{p.resolve()} (read-only)" for p in ctx.read_only_dirs]
    return ", ".join(parts)


def containing_root(ctx: ToolContext, path: Path) -> Path | None:
    """The allowed root (resolved) that holds the resolved `path`, or None."""
    for root in readable_roots(ctx):
        if path == root or path.is_relative_to(root):
            return root
    return None


def _absolute(ctx: ToolContext, raw: str) -> Path:
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("the path is empty; give a path relative to the project root.")
    if "\0" in raw:
        raise ToolError("the path contains a NUL character.")
    path = Path(raw.strip())
    with contextlib.suppress(RuntimeError):  # "~nobody": no such user, taken literally
        path = path.expanduser()
    path = path if path.is_absolute() else ctx.root / path
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if longest > NAME_MAX or len(os.fsencode(path)) >= PATH_MAX:
        raise ToolError(f"the path {raw[:80]!r}... is too long: file names hold at most "
                        f"{NAME_MAX} bytes and whole paths {PATH_MAX - 1}.")
    return path


def _resolve(ctx: ToolContext, raw: str) -> Path:
    """The absolute, symlink-free form of a path the model gave."""
    try:
        return _absolute(ctx, raw).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise ToolError(f"{raw} cannot be resolved: {exc}.") from None


def _named(raw: str, resolved: Path) -> str:
    """"/etc/x is" for a path given as it resolves; "../x resolves to /tmp/x, which is"
    otherwise."""
    return f"{raw} is" if raw == str(resolved) else f"{raw} resolves to {resolved}, which is"


def resolve_read(ctx: ToolContext, raw: str) -> Path:
    """Resolve a path the model gave for reading; raise ToolError if it leads outside, or
    into `.swival/undo` (the unredacted copies /undo restores are never shown)."""
    resolved = _resolve(ctx, raw)
    if containing_root(ctx, resolved) is None:
        raise ToolError(
            f"{_named(raw, resolved)} outside the workspace. Allowed: {describe_roots(ctx)}."
        )
    root = ctx.root.resolve()
    inside = [comparable(p) for p in resolved.relative_to(root).parts] if (
        resolved.is_relative_to(root)) else []
    if inside[:2] == [comparable(STATE_DIR), comparable(UNDO)]:
        raise ToolError(
            f"{raw} is inside {STATE_DIR}/{UNDO}/, where Swival keeps copies of files for the "
            "user's /undo; tools cannot read it. Read the project's files instead.")
    return resolved


def resolve_write(ctx: ToolContext, raw: str) -> Path:
    """Resolve a path the model gave for writing; raise ToolError if it may not be written."""
    resolved = _resolve(ctx, raw)
    root = next(
        (r for r in writable_roots(ctx) if resolved == r or resolved.is_relative_to(r)), None
    )
    if root is None:
        where = "in a read-only directory" if containing_root(ctx, resolved) else (
            "outside the workspace"
        )
        raise ToolError(
            f"{_named(raw, resolved)} {where}; it cannot be written. "
            f"Allowed: {describe_roots(ctx)}."
        )
    protected = protected_part(resolved.relative_to(root).parts)
    if protected == ".git":
        raise ToolError(
            f"{raw} is inside a .git directory; writing there is refused. "
            "Use run_command with git to change the repository."
        )
    if protected == STATE_DIR:
        raise ToolError(
            f"{raw} is inside {STATE_DIR}/, which holds Swival's own state (transcripts, "
            "saved outputs); tools may read it but never write there. Write your file "
            "somewhere else in the project."
        )
    return resolved


def display(ctx: ToolContext, path: Path) -> str:
    """`path` relative to the project root when inside it, else absolute (POSIX form)."""
    root = ctx.root.resolve()
    if path == root:
        return "."
    if path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return path.as_posix()
