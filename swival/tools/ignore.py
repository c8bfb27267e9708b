"""Glob matching and a directory walk that honours `.gitignore` files.

Supported gitignore syntax: blank lines and `#` comments, `\\#`/`\\!` escapes, `*`, `?`,
`[...]` classes, `**` (leading `**/`, trailing `/**`, inner `/**/`), a trailing `/`
for directories only, a leading or inner `/` that anchors the pattern to the
directory of its `.gitignore`, and `!` negation (the last matching rule wins; a file
inside an ignored directory is never re-included, as in git). Nested `.gitignore`
files apply to their own subtree. `.git/` and `.swival/` are always skipped.
Symlinked directories are listed but never entered (no loops, no escapes).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ALWAYS_SKIPPED = frozenset({".git", ".swival"})


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
    """Expand one level of `{a,b}` alternatives, e.g. `*.{py,md}` -> `*.py`, `*.md`."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", glob)
    if not match:
        return [glob]
    head, tail = glob[:match.start()], glob[match.end():]
    out: list[str] = []
    for alt in match.group(1).split(","):
        out.extend(expand_braces(head + alt + tail))
    return out


def compile_glob(glob: str) -> re.Pattern[str]:
    """A matcher for paths relative to a directory. A glob without `/` matches the
    file name at any depth (`*.py`); one with `/` matches from the directory."""
    bodies = []
    for alt in expand_braces(glob.strip()):
        alt = alt.removeprefix("./").lstrip("/")
        body = glob_to_regex(alt)
        bodies.append(body if "/" in alt else "(?:.*/)?" + body)
    return re.compile("(?:" + "|".join(bodies) + r")\Z", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def parse_gitignore(text: str) -> list[Rule]:
    """Parse the text of one `.gitignore` into rules, in file order."""
    rules = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        line = re.sub(r"(?<!\\)\s+$", "", line)
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = glob_to_regex(line.lstrip("/"))
        if not anchored:
            body = "(?:.*/)?" + body
        rules.append(Rule(re.compile(body + r"\Z", re.DOTALL), negate, dir_only))
    return rules


@dataclass(frozen=True)
class RuleSet:
    """The rules of one `.gitignore`, and the directory they are relative to."""

    base: Path
    rules: tuple[Rule, ...]


def load_rules(directory: Path) -> RuleSet | None:
    """The rules of `directory/.gitignore`, or None when there is none (or unreadable)."""
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    rules = parse_gitignore(text)
    return RuleSet(directory, tuple(rules)) if rules else None


def is_ignored(path: Path, is_dir: bool, stack: tuple[RuleSet, ...]) -> bool:
    """Whether `path` is ignored by the rule sets (outermost first; last match wins)."""
    if path.name in ALWAYS_SKIPPED:
        return True
    ignored = False
    for rule_set in stack:
        try:
            rel = path.relative_to(rule_set.base).as_posix()
        except ValueError:
            continue
        for rule in rule_set.rules:
            if (is_dir or not rule.dir_only) and rule.regex.match(rel):
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


def walk(start: Path, stack: tuple[RuleSet, ...]) -> Iterator[tuple[Path, bool]]:
    """Yield (path, is_dir) below `start`, depth first in name order, skipping ignored
    entries and never entering ignored or symlinked directories. `stack` holds the rule
    sets that apply above `start` (see `rules_above`)."""
    own = load_rules(start)
    if own:
        stack = (*stack, own)
    try:
        with os.scandir(start) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=True)
            is_link = entry.is_symlink()
        except OSError:
            continue
        path = Path(entry.path)
        if is_ignored(path, is_dir, stack):
            continue
        yield path, is_dir
        if is_dir and not is_link:
            yield from walk(path, stack)
