"""The model's regular expressions, compiled so that no pattern can stall or exhaust memory.

Matching uses the `regex` module because it can stop a match at a timeout (see
deadline.py). The syntax stays Python's: a pattern is first checked with `re`, so regex-only
features — recursion such as `(?R)`, which allocates without bound — are refused, and the
model gets `re`'s own error messages. One more check is needed because `regex` unrolls
counted repeats when it compiles: `(?:a{1000}){1000}` would build a million nodes and
`((a{10}){10})...` nested ten deep exhausts memory, so a pattern whose unrolled size passes
MAX_UNROLLED is refused before `regex` sees it.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import regex

from swival.tools.base import ToolError

MAX_UNROLLED = 20_000
_QUANTIFIER = re.compile(r"\{(\d*)(?:,(\d*))?\}")


@dataclass(frozen=True)
class Search:
    """The per-line pattern, and the whole-file prefilter when one is safe."""

    line: regex.Pattern[str]
    quick: regex.Pattern[str] | None


def _class_end(pattern: str, start: int) -> int:
    """Index just past the character class opening at `start` (or the pattern's end)."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):  # a leading "]" is a literal
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def unrolled_size(pattern: str) -> int:
    """An upper estimate of the nodes `regex` builds: every atom counts one, and a counted
    repeat `{n}` / `{n,m}` multiplies what it applies to by n (the optional part of
    `{n,m}` stays a loop, so only the minimum unrolls)."""
    sizes = [0]  # the running size of each open group, outermost first
    last, i = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        quantifier = _QUANTIFIER.match(pattern, i) if ch == "{" else None
        if quantifier and (quantifier.group(1) or quantifier.group(2)):
            low = quantifier.group(1) or "0"
            times = max(1, int(low)) if len(low) < 10 else MAX_UNROLLED + 1
            sizes[-1] += last * (times - 1)
            last *= times
            i = quantifier.end()
            continue
        if ch == "(":
            sizes.append(0)
            i += 1
            continue
        if ch == ")" and len(sizes) > 1:
            last = max(1, sizes.pop())
            sizes[-1] += last
            i += 1
            continue
        i = _class_end(pattern, i) if ch == "[" else i + (2 if ch == "\\" else 1)
        last = 1
        sizes[-1] += 1
    return sum(sizes)


def compile_search(pattern: str, ignore_case: bool) -> Search:
    """Compile a grep pattern; ToolError (saying how to fix it) when it is not valid Python
    regex syntax or would be too large to build."""
    flags = re.IGNORECASE if ignore_case else 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and the like
            re.compile(pattern, flags)
    except re.error as exc:
        raise ToolError(
            f"invalid regex {pattern!r}: {exc}. Escape special characters such as "
            "( ) [ ] { } . * + ? | with a backslash to match them literally."
        ) from None
    except RecursionError:
        raise ToolError(f"the regex {pattern[:80]!r}... nests groups too deeply; "
                        "use a flatter pattern.") from None
    size = unrolled_size(pattern)
    if size > MAX_UNROLLED:
        raise ToolError(
            f"the regex {pattern[:200]!r} is too large: its repeat counts multiply to about "
            f"{size:,} pattern steps (at most {MAX_UNROLLED:,}). Use smaller {{n}} counts "
            "or `+` / `*` instead."
        )
    rflags = regex.IGNORECASE if ignore_case else 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        line = regex.compile(pattern, rflags)
        # The whole-file prefilter can disagree with the per-line search when lookarounds
        # or \A / \Z anchors see across lines; then every file is searched line by line.
        safe = not ("(?" in pattern or "\\A" in pattern or "\\Z" in pattern)
        quick = regex.compile(pattern, rflags | regex.MULTILINE) if safe else None
    return Search(line, quick)
