"""@path mentions: files and directories a person names in a request, attached to it.

`attach(text, ctx)` finds words that start with `@` (at the start of the text, or after
whitespace, a bracket or a quote), up to the next whitespace. A word that names a file in
the readable directories is read the way read_file reads it (the same caps, line numbers
and secret markers, and it then counts as read, so the model may edit it without reading
it again); a directory is listed the way list_files lists it. Each attachment becomes
a delimited block, to go after the person's text in the request. Trailing punctuation is dropped
when the word with it names nothing ("see @app.py."). A path outside the workspace is
refused, with read_file's reason; a word that names nothing stays plain text (an
`@decorator`, a handle), and one that looks like a path is reported as not found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from swival.tools.approval import person_words
from swival.tools.base import ToolContext, ToolError
from swival.tools.list_files import ListFiles
from swival.tools.read_file import ReadFile
from swival.tools.workspace import display, resolve_read
from swival.words import plural

MENTION = re.compile(r"(?<![^\s(\[{\"'`])@([^\s@]+)")
TRAILING = ".,;:!?)]}'\"`"
MAX_ATTACHMENTS = 20


@dataclass(frozen=True)
class Attachment:
    """One attached path: `shown` relative to the project root, `kind` "file" or
    "directory", `summary` a few words for the person ("120 lines", "14 entries")."""

    shown: str
    kind: str
    summary: str


@dataclass(frozen=True)
class Mentions:
    """What goes after the person's words (`blocks`: a note and one block per
    attachment; empty when nothing was attached), what was attached, and why other
    mentions were not (for the person)."""

    blocks: str = ""
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


def _block(ctx: ToolContext, shown: str) -> tuple[str, Attachment]:
    """The delimited block for one path. Raises ToolError when it cannot be read."""
    if (ctx.root / shown).is_dir() or shown == ".":
        result = ListFiles().run({"path": shown}, ctx)
        kind, what = "directory", "listing"
        summary = plural(int(result.meta.get('count', 0)), 'entry', 'entries')
    else:
        result = ReadFile().run({"file_path": shown}, ctx)
        kind, what = "file", "content, numbered as read_file shows it"
        summary = f"{result.meta.get('shown', '?')} of {result.meta.get('lines', '?')} lines"
    body = result.content.rstrip("\n")
    text = f"--- @{shown} ({kind} {what}) ---\n{body}\n--- end of @{shown} ---"
    return text, Attachment(shown, kind, summary)


def attach(text: str, ctx: ToolContext) -> Mentions:
    """The attachments for every @mention `text` makes (see the module docstring)."""
    blocks: list[str] = []
    attached: list[Attachment] = []
    problems: list[str] = []
    for match in MENTION.finditer(text):
        shown, problem = _find(ctx, match.group(1))
        if problem:
            problems.append(problem)
        if shown is None or any(a.shown == shown for a in attached):
            continue
        if len(attached) == MAX_ATTACHMENTS:
            problems.append(f"@{shown} was not attached: at most {MAX_ATTACHMENTS} paths are "
                            "attached to one request.")
            continue
        try:
            block, attachment = _block(ctx, shown)
        except ToolError as exc:
            problems.append(f"@{shown} was not attached: {_why(exc)}")
            continue
        blocks.append(block)
        attached.append(attachment)
    if not blocks:
        return Mentions("", (), tuple(problems))
    note = "[The user attached these with @. They count as read: edit them directly.]"
    return Mentions("\n\n".join([note, *blocks]), tuple(attached), tuple(problems))
