"""Glob matching and a directory walk that honours `.gitignore` files.

Supported gitignore syntax: blank lines and `#` comments, `\\#`/`\\!` escapes, `*`, `?`,
`[...]` classes, `**` (leading `**/`, trailing `/**`, inner `/**/`), a trailing `/`
for directories only, a leading or inner `/` that anchors the pattern to the
directory of its `.gitignore`, and `!` negation (the last matching rule wins; a file
inside an ignored directory is never re-included, as in git). Nested `.gitignore`
files apply to their own subtree. `.git/` and `.swival/` are always skipped.
Symlinked directories are listed but never entered (no loops, no escapes).

Globs come from the model and `.gitignore` files from the repository (or the model), so
matching must not stall: globs compile to `regex` patterns, and a glob with several
wildcards — the only kind that can backtrack badly — is matched under a timeout. A rule that
does not compile, or times out, matches nothing, as git ignores a rule it cannot use. A
walk stops at its deadline; pipes, sockets and devices are reported as `special`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import regex

from swival.tools.base import ToolError
from swival.tools.deadline import MATCH_SECONDS, Deadline
from swival.tools.regular import NotRegularFile, kind_of, open_regular

ALWAYS_SKIPPED = frozenset({".git", ".swival"})
MAX_GLOB_ALTERNATIVES = 64  # `{a,b}` alternatives one glob may expand to
# Up to this many wildcards a glob is matched without a timeout: the regex module stays
# fast there, and a timeout costs several microseconds per match.
FREE_WILDCARDS = 2
MAX_GITIGNORE_BYTES = 1 << 20
# One `{a,b,...}` group without nested braces; written so no text can make it backtrack.
_BRACES = re.compile(r"\{([^{},]*(?:,[^{},]*)+)\}")


def glob_to_regex(glob: str) -> str:
    """Translate a slash-separated glob into a regex body (no anchors).

    `*` and `?` never cross `/`; `**` as a whole path segment crosses any number of them.
    """
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        ch = glob[i]
        if glob.startswith("**", i):
            at_seg_start = i == 0 or glob[i - 1] == "/"
            if at_seg_start and glob.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
                continue
            if at_seg_start and i + 2 == n:
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = glob.find("]", i + 2 if glob.startswith("[!", i) or glob.startswith("[^", i)
                            else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = glob[i + 1:end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def expand_braces(glob: str) -> list[str]:
    """Expand `{a,b}` alternatives, e.g. `*.{py,md}` -> `*.py`, `*.md`. Raises ToolError
    past MAX_GLOB_ALTERNATIVES results (`{a,b}` repeated 30 times is a billion)."""
    out: list[str] = []
    pending = [glob]
    while pending:
        current = pending.pop()
        match = _BRACES.search(current)
        if not match:
            out.append(current)
            continue
        head, tail = current[:match.start()], current[match.end():]
        pending.extend(head + alt + tail for alt in reversed(match.group(1).split(",")))
        if len(out) + len(pending) > MAX_GLOB_ALTERNATIVES:
            raise ToolError(
                f"the pattern {glob!r} expands to more than {MAX_GLOB_ALTERNATIVES} "
                "alternatives; use fewer {a,b} groups."
            )
    return out


def _wildcards(glob: str) -> int:
    return glob.count("*") + glob.count("?")


@dataclass(frozen=True)
class Glob:
    """A compiled glob. `match(path)` is true when the relative POSIX path matches."""

    text: str
    pattern: regex.Pattern[str]
    timed: bool  # several wildcards: match under a timeout

    def match(self, path: str, deadline: Deadline | None = None) -> bool:
        """Raises ToolError when one match runs past MATCH_SECONDS; returns False when it
        is cut short by `deadline` (the caller sees the deadline passed and stops)."""
        if not self.timed:
            return self.pattern.match(path) is not None
        try:
            timeout = deadline.timeout() if deadline else MATCH_SECONDS
            return self.pattern.match(path, timeout=timeout) is not None
        except TimeoutError:
            if deadline is not None and deadline.expired:
                return False
            raise ToolError(
                f"the pattern {self.text!r} took too long to match {path!r}; use a glob "
                "with fewer wildcards, such as '**/*.py' or 'src/**/test_*'."
            ) from None


def compile_glob(glob: str) -> Glob:
    """A matcher for paths relative to a directory. A glob without `/` matches the
    file name at any depth (`*.py`); one with `/` matches from the directory. Raises
    ToolError for a glob that cannot be compiled."""
    bodies = []
    for alt in expand_braces(glob.strip()):
        alt = alt.removeprefix("./").lstrip("/")
        body = glob_to_regex(alt)
        bodies.append(body if "/" in alt else "(?:.*/)?" + body)
    try:
        pattern = regex.compile("(?:" + "|".join(bodies) + r")\Z", regex.DOTALL)
    except regex.error as exc:
        raise ToolError(f"the pattern {glob!r} is not a valid glob ({exc}).") from None
    return Glob(glob, pattern, _wildcards(glob) > FREE_WILDCARDS)


@dataclass(frozen=True)
class Rule:
    glob: Glob
    negate: bool
    dir_only: bool

    def matches(self, rel: str, deadline: Deadline | None = None) -> bool:
        try:
            return self.glob.match(rel, deadline)
        except ToolError:  # too slow to decide: treat like a rule git could not use
            return False


def _compile_rule(line: str, anchored: bool) -> Glob | None:
    body = glob_to_regex(line.lstrip("/"))
    if not anchored:
        body = "(?:.*/)?" + body
    try:
        pattern = regex.compile(body + r"\Z", regex.DOTALL)
    except regex.error:
        return None
    return Glob(line, pattern, _wildcards(line) > FREE_WILDCARDS)


def _strip_trailing_space(line: str) -> str:
    """Trailing whitespace goes, except one space escaped with a backslash (`foo\\ `)."""
    stripped = line.rstrip()
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + line[len(stripped)]
    return stripped


def parse_gitignore(text: str) -> list[Rule]:
    """Parse the text of one `.gitignore` into rules, in file order."""
    rules = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        line = _strip_trailing_space(line)
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        glob = _compile_rule(line, anchored="/" in line)
        if glob is not None:
            rules.append(Rule(glob, negate, dir_only))
    return rules


@dataclass(frozen=True)
class RuleSet:
    """The rules of one `.gitignore`, and the directory they are relative to."""

    base: Path
    rules: tuple[Rule, ...]


def load_rules(directory: Path) -> RuleSet | None:
    """The rules of `directory/.gitignore`, or None when there is none (or it is unreadable,
    or a pipe or device, which is never opened)."""
    try:
        with open_regular(directory / ".gitignore") as f:
            text = f.read(MAX_GITIGNORE_BYTES).decode("utf-8", errors="replace")
    except (OSError, NotRegularFile):
        return None
    rules = parse_gitignore(text)
    return RuleSet(directory, tuple(rules)) if rules else None


def is_ignored(path: Path, is_dir: bool, stack: tuple[RuleSet, ...],
               deadline: Deadline | None = None) -> bool:
    """Whether `path` is ignored by the rule sets (outermost first; last match wins).
    Slow rules get what is left of `deadline` (or MATCH_SECONDS without one)."""
    if path.name in ALWAYS_SKIPPED:
        return True
    ignored = False
    for rule_set in stack:
        try:
            rel = path.relative_to(rule_set.base).as_posix()
        except ValueError:
            continue
        for rule in rule_set.rules:
            if (is_dir or not rule.dir_only) and rule.matches(rel, deadline):
                ignored = not rule.negate
    return ignored


def rules_above(base: Path, start: Path) -> tuple[RuleSet, ...]:
    """The rule sets of `base` and every directory between it and `start` (exclusive)."""
    stack: list[RuleSet] = []
    if not start.is_relative_to(base):
        return ()
    current = base
    for part in start.relative_to(base).parts:
        rule_set = load_rules(current)
        if rule_set:
            stack.append(rule_set)
        current = current / part
    return tuple(stack)


class Entry(NamedTuple):
    """One walked path: a directory, or a file; `special` marks a pipe, socket or device."""

    path: Path
    is_dir: bool
    special: bool = False


def _entry(entry: os.DirEntry[str]) -> Entry | None:
    """Classify a directory entry (symlinks followed; a dangling link is a file)."""
    try:
        is_dir = entry.is_dir(follow_symlinks=True)
        special = not is_dir and not entry.is_file(follow_symlinks=True) and bool(
            kind_of(entry.stat(follow_symlinks=True).st_mode))
    except FileNotFoundError:
        special = False  # a dangling symlink: listed like a file, reading it fails cleanly
    except OSError:
        return None
    return Entry(Path(entry.path), is_dir, special)


def scan_dir(directory: Path) -> list[Entry]:
    """The entries of `directory`, classified, in name order. Raises OSError."""
    with os.scandir(directory) as it:
        found = [_entry(e) for e in sorted(it, key=lambda e: e.name)]
    return [e for e in found if e is not None]


def walk(start: Path, stack: tuple[RuleSet, ...],
         deadline: Deadline | None = None) -> Iterator[Entry]:
    """Yield an Entry for everything below `start`, depth first in name order, skipping
    ignored entries and never entering ignored or symlinked directories. `stack` holds the
    rule sets that apply above `start` (see `rules_above`). Ends early once `deadline` has
    passed; the caller checks it to say the walk was cut short."""
    own = load_rules(start)
    if own:
        stack = (*stack, own)
    try:
        entries = scan_dir(start)
    except OSError:
        return
    for entry in entries:
        if deadline is not None and deadline.expired:
            return
        if is_ignored(entry.path, entry.is_dir, stack, deadline):
            continue
        yield entry
        if entry.is_dir and not entry.path.is_symlink():
            yield from walk(entry.path, stack, deadline)
