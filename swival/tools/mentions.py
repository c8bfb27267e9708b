"""@path mentions: files and directories a person names in a request, attached to it.

`attach(text, ctx)` finds words that start with `@` (at the start of the text, or after
whitespace, a bracket or a quote), up to the next whitespace; a path with spaces is
quoted (`@"my dir/a b.txt"`) or has them escaped (`@my\\ dir/a\\ b.txt`, as Tab writes
it). A word that names a file in the readable directories is read the way read_file
reads it (the same caps, line numbers and secret markers); a directory is listed the way
list_files lists it. Each attachment is a delimited block (`opening`, `body`, `closing`)
to go after the person's text; the context engine cuts each body to the window as it
would cut a tool result, and says what it sent. Only then does a file count as read
(`Attachment.sent`): when the model got all of it, so the model may edit it without
reading it again; a file it got part of must be read before it is written, as with any
file. Trailing punctuation is dropped when the word with it names nothing ("see
@app.py."). A path outside the workspace is refused, with read_file's reason; a word
that names nothing stays plain text (an `@decorator`, a handle), and one that looks like
a path is reported as not found.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from swival.tools.approval import person_words
from swival.tools.base import ToolContext, ToolError
from swival.tools.list_files import ListFiles
from swival.tools.read_file import ReadFile
from swival.tools.workspace import display, resolve_read
from swival.words import lines_of, plural

# @path, @"a path with spaces" (or in single quotes), @a\ path\ with\ spaces
MENTION = re.compile(r"(?<![^\s(\[{\"'`])@(?:\"([^\"\n]+)\"|'([^'\n]+)'|((?:\\ |[^\s@])+))")
TRAILING = ".,;:!?)]}'\"`"
MAX_ATTACHMENTS = 20


@dataclass(frozen=True)
class Attachment:
    """One attached path: `shown` relative to the project root, `kind` "file" or
    "directory"; the block for the request (`opening`, `body` as read_file or
    list_files gave it, `closing`) and that tool's `meta`."""

    shown: str
    kind: str
    opening: str
    body: str
    closing: str
    meta: Mapping[str, Any]
    seen: tuple[Path, tuple[int, int]] | None = None  # as read_file records a read

    @property
    def whole(self) -> bool:
        """The file was read to its end (not cut by read_file's own caps)."""
        return self.kind == "file" and self.meta.get("shown") == self.meta.get("lines")

    def sent(self, ctx: ToolContext, kept_lines: int | None) -> str:
        """Record what the model got — the whole body, or `kept_lines` of it — and
        say so for the person ("120 of 400 lines", "1 entry"). A file the model got
        whole counts as read from now on."""
        if self.kind == "directory":
            return plural(int(self.meta.get("count", 0)), "entry", "entries")
        total = self.meta.get("lines", "?")
        if kept_lines is None and self.whole and self.seen is not None:
            ctx.read_files[self.seen[0]] = self.seen[1]
        shown = self.meta.get("shown", "?") if kept_lines is None else kept_lines
        if isinstance(shown, int) and isinstance(total, int):
            return lines_of(shown, total)
        return f"{shown} of {total} lines"


@dataclass(frozen=True)
class Mentions:
    """What was attached, in order (with `note`, the line for the model that goes
    before the blocks; empty when nothing was attached), and why other mentions were
    not (for the person)."""

    note: str = ""
    attached: tuple[Attachment, ...] = ()
    problems: tuple[str, ...] = ()


def _candidates(word: str) -> list[str]:
    """The word, then the word without each trailing punctuation mark in turn."""
    out = [word]
    while word and word[-1] in TRAILING:
        word = word[:-1]
        if word:
            out.append(word)
    return out


def _why(error: ToolError) -> str:
    """A tool's error in the person's words (its summary, or its first sentence)."""
    return (error.summary or person_words(str(error))) + "."


def _looks_like_path(word: str) -> bool:
    return "/" in word or "." in word.strip(".")


def _find(ctx: ToolContext, word: str) -> tuple[str | None, str | None]:
    """(the path to attach, relative to the root, or None; a problem to report, or None)."""
    refusal = None
    for candidate in _candidates(word):
        try:
            path = resolve_read(ctx, candidate)
        except ToolError as exc:
            refusal = refusal or f"@{candidate} was not attached: {_why(exc)}"
            continue
        if path.exists():
            return display(ctx, path), None
    if refusal is not None:
        return None, refusal
    if _looks_like_path(word.rstrip(TRAILING)):
        return None, (f"@{word.rstrip(TRAILING)} was not attached: there is no such file or "
                      "directory in the project.")
    return None, None


def _read(ctx: ToolContext, shown: str) -> Attachment:
    """One path, read or listed. The tool runs on a copy of the context whose record
    of read files is thrown away: what counts as read is decided once the engine has
    cut the request (Attachment.sent). Raises ToolError when it cannot be read."""
    scratch = replace(ctx, read_files={})
    if (ctx.root / shown).is_dir() or shown == ".":
        result = ListFiles().run({"path": shown}, scratch)
        kind, what = "directory", "listing"
    else:
        result = ReadFile().run({"file_path": shown}, scratch)
        kind, what = "file", "content, numbered as read_file shows it"
    return Attachment(shown, kind, f"--- @{shown} ({kind} {what}) ---",
                      result.content.rstrip("\n"), f"--- end of @{shown} ---", result.meta,
                      next(iter(scratch.read_files.items()), None))


def attach(text: str, ctx: ToolContext) -> Mentions:
    """The attachments for every @mention `text` makes (see the module docstring)."""
    attached: list[Attachment] = []
    problems: list[str] = []
    for match in MENTION.finditer(text):
        quoted, single, bare = match.groups()
        shown, problem = _find(ctx, quoted or single or bare.replace("\\ ", " "))
        if problem:
            problems.append(problem)
        if shown is None or any(a.shown == shown for a in attached):
            continue
        if len(attached) == MAX_ATTACHMENTS:
            problems.append(f"@{shown} was not attached: at most {MAX_ATTACHMENTS} paths are "
                            "attached to one request.")
            continue
        try:
            attached.append(_read(ctx, shown))
        except ToolError as exc:
            problems.append(f"@{shown} was not attached: {_why(exc)}")
    return Mentions(_note(attached), tuple(attached), tuple(problems))


NOTE_START = "[The user attached these with @"


def _note(attached: list[Attachment]) -> str:
    if not attached:
        return ""
    if any(a.kind == "file" for a in attached):
        return (f"{NOTE_START}. A file shown whole counts as read: edit it "
                "directly. A file cut short must be read (read_file) before you edit it.]")
    return f"{NOTE_START}.]"


def typed_request(content: str) -> str:
    """A request as the person typed it: its recorded `content` without the files and
    listings attached after it (for lists and replays a person reads)."""
    return content.strip().split("\n\n" + NOTE_START, 1)[0]
