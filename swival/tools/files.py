"""Safe writes shared by write_file and edit_file.

- Approved: the session's edit policy sees the diff first (`--edits ask` asks the person).
- Undoable: what the write replaces is kept for /undo (swival/tools/undo.py).
- Atomic: the new content goes to a temporary file in the same directory, is flushed to
  disk, then renamed over the target, so a crash leaves the old file or the new one,
  never half of each (swival/tools/atomic.py). The original permission bits are kept;
  new files get 0666 minus the umask, as any editor would create them.
- Stale-read guard: an existing file may only be replaced when the model read it in
  this session and it has not changed on disk since (same mtime_ns and size).
- Secrets survive: the model only ever saw a secret's marker (`[redacted:NAME]`), so
  where the new text keeps the marker of a secret the file held, `write_back` puts the
  value back; what it cannot map back without guessing is refused, file unchanged.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

from swival.redaction import MARKER_START, marker
from swival.tools.approval import person_words
from swival.tools.atomic import atomic_write
from swival.tools.base import ToolContext, ToolError
from swival.tools.output import looks_binary
from swival.tools.regular import NotRegularFile, not_regular_message, open_regular, special_kind
from swival.tools.workspace import display

DIFF_CAP = 4096
DIFF_MAX_LINES = 2000  # changed lines difflib may compare (see capped_diff)
MARKER_TEXT = re.compile(re.escape(MARKER_START) + r"[^\]\s]{0,80}\]?")


def fingerprint(path: Path) -> tuple[int, int]:
    """What read_file records and writes compare: (mtime_ns, size)."""
    st = path.stat()
    return st.st_mtime_ns, st.st_size


def remember(ctx: ToolContext, path: Path) -> None:
    """Record that the model has seen the current content of `path`."""
    ctx.read_files[path] = fingerprint(path)


def check_fresh(ctx: ToolContext, path: Path) -> None:
    """Raise ToolError unless `path` was read this session and is unchanged since."""
    seen = ctx.read_files.get(path)
    name = display(ctx, path)
    if seen is None:
        raise ToolError(
            f"{name} already exists and you have not read it in this session. "
            f"Call read_file on {name} first, then retry.",
            summary=f"not written: {name} exists and was not read in this session",
        )
    if fingerprint(path) != seen:
        raise ToolError(
            f"{name} changed on disk since you last read it. "
            f"Call read_file on {name} again to see its current content, then retry.",
            summary=f"not written: {name} changed on disk since it was read",
        )


def check_regular(ctx: ToolContext, path: Path, tool: str) -> None:
    """Raise ToolError when `path` exists and is a pipe, socket or device: writing would
    replace it, and reading it first could block."""
    kind = special_kind(path)
    if kind:
        raise ToolError(not_regular_message(display(ctx, path), kind, tool))


def read_text(ctx: ToolContext, path: Path) -> str:
    """The UTF-8 text of an existing file that is about to be edited or replaced."""
    name = display(ctx, path)
    if path.is_dir():
        raise ToolError(f"{name} is a directory, not a file.")
    try:
        with open_regular(path) as f:
            data = f.read()
    except NotRegularFile as exc:
        raise ToolError(not_regular_message(name, exc.kind, "this tool")) from None
    if looks_binary(data):
        raise ToolError(f"{name} is a binary file; it cannot be edited as text.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{name} is not valid UTF-8 (byte {exc.start}); it cannot be edited as text."
        ) from exc


def capped_diff(old: str, new: str, name: str, cap: int = DIFF_CAP) -> str:
    """A unified diff of old -> new for the UI, cut to about `cap` characters.

    difflib takes quadratic time on many scattered changes (minutes for a 40,000-line file
    edited every few lines), so when the changed region is longer than DIFF_MAX_LINES the
    diff is computed line by line (same line count) or only summarised.
    """
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))
    tail = next((i for i, (x, y) in enumerate(zip(reversed(a[head:]), reversed(b[head:]),
                                                  strict=False)) if x != y),
                min(len(a), len(b)) - head)
    changed = max(len(a), len(b)) - head - tail
    header = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    if changed <= DIFF_MAX_LINES:
        lines: Iterable[str] = difflib.unified_diff(a, b, fromfile=f"a/{name}",
                                                    tofile=f"b/{name}", n=2)
    elif len(a) == len(b):
        lines = chain(header, _pairwise_hunks(a, b, head, len(a) - tail))
    else:
        lines = [*header, f"@@ -{head + 1},{len(a) - head - tail} +{head + 1},"
                          f"{len(b) - head - tail} @@ too many changed lines to diff\n"]
    return _cut(lines, cap)


def _pairwise_hunks(a: list[str], b: list[str], start: int, end: int) -> Iterator[str]:
    """Context-free hunks for two texts with the same number of lines."""
    i = start
    while i < end:
        if a[i] == b[i]:
            i += 1
            continue
        j = i
        while j < end and a[j] != b[j]:
            j += 1
        yield f"@@ -{i + 1},{j - i} +{i + 1},{j - i} @@\n"
        yield from ("-" + line for line in a[i:j])
        yield from ("+" + line for line in b[i:j])
        i = j


def _cut(lines: Iterable[str], cap: int) -> str:
    out: list[str] = []
    size = 0
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        if size + len(line) > cap:
            out.append("… [diff cut]\n")
            break
        out.append(line)
        size += len(line)
    return "".join(out)




def count_text_lines(text: str) -> int:
    """Lines in `text`, counting a last line without newline."""
    return text.count("\n") + (bool(text) and not text.endswith("\n"))


def write_failure(ctx: ToolContext, path: Path, exc: OSError) -> ToolError:
    """A model-facing error for a write the operating system refused."""
    reason = exc.strerror or str(exc)
    return ToolError(
        f"could not write {display(ctx, path)}: {reason}. The file was left unchanged."
    )


def commit(ctx: ToolContext, path: Path, original: str | None, text: str) -> tuple[bool, str]:
    """Replace `original` (None: a new file) at `path` by `text`, once the edit policy
    allows it (it sees the diff), keeping the old content for /undo, atomically; then
    record the file as read. Returns (created, the diff as the model may see it). Raises
    ToolError, file unchanged, when refused or when the copy or the write fails."""
    name, redact = display(ctx, path), ctx.redactor.redact
    diff = capped_diff(redact(original or ""), redact(text), name)
    refusal = ctx.approve_edit(name, diff, original is None)
    if refusal:
        raise ToolError(refusal, person_words(refusal))
    if ctx.undo is not None:
        try:
            ctx.undo.keep(path, name)
        except OSError as exc:
            raise ToolError(f"could not keep a copy of {name} for /undo "
                            f"({exc.strerror or exc}), so it was left unchanged.") from None
    try:
        created = atomic_write(path, text)
    except OSError as exc:
        raise write_failure(ctx, path, exc) from exc
    if ctx.undo is not None:
        ctx.undo.wrote(path, text.encode("utf-8"))
    remember(ctx, path)
    return created, diff


def write_back(ctx: ToolContext, path: Path, original: str | None, view: str,
               ) -> tuple[str, str]:
    """The text to write when `view` (the new content as the model sees it, secrets as
    markers) replaces `original` (None: a new file), and a note for the model.

    The markers of the secrets `original` held get their values back. A secret's value
    goes only into a file that held it (else writing a marker would copy the key
    wherever the model likes); other markers stay plain text. Raises ToolError, file
    unchanged, when this cannot be done without guessing: the file also holds a held
    secret's marker as plain text, or the new content holds a marker (or a damaged
    one) that stands for no secret the file held."""
    redactor, name = ctx.redactor, display(ctx, path)
    held: set[str] = set()
    if original is not None:
        redactor.redact(original, held)
    if not held:
        loose = redactor.literal_markers(view, redactor.names)
        note = (f" {_listed(loose)} written as plain text: Swival writes a secret's value "
                "only into a file that held it." if loose else "")
        return view, note
    assert original is not None
    clash = redactor.literal_markers(original, held)
    if clash:
        raise ToolError(
            f"{name} holds the secret {_listed(clash)} and also that marker as plain text, "
            "so the two cannot be told apart when writing it back. The file was left "
            "unchanged; ask the user to make this change.")
    text = redactor.restore(view, held)
    stray = [m for m in MARKER_TEXT.findall(text) if m not in original]
    if stray:
        raise ToolError(
            f"the new content of {name} holds {stray[0]!r}, which stands for no secret this "
            f"file held ({_listed(held)}). Copy each marker exactly as read_file showed it; "
            "a secret's value can only be written back into the file that held it. The "
            "file was left unchanged.")
    kept = {n for n in held if marker(n) in view}
    gone = {n for n in held - kept if dict(redactor.secrets)[n] not in text}
    notes = [f" Secret values written back: {_listed(kept)}." if kept else "",
             f" {name} no longer holds {_listed(gone)}." if gone else ""]
    return text, "".join(notes)


def _listed(names: set[str]) -> str:
    return ", ".join(marker(n) for n in sorted(names))
