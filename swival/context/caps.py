"""The window-scaled cap on one tool result (layer 1, second stage).

Tools already apply fixed caps (50 KB reads, 10 KB command output ...). Those are
still too big for a small window: a 50 KB read is ~12K tokens. Here no single result
may exceed a share of the input budget; the full text goes to a file and the model
gets a preview shaped by the output's kind plus the path and how to page through it:

    command   head and tail (the command line and the verdict both matter)
    matches   the leading matches
    file      the head, and how to continue: the tool's `meta["continue"]` template
              with `{line}` filled in (the tool knows how it is called)
    other     the head
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from swival.redaction import Redactor
from swival.state import spill_folder, spill_text

HEAD_SHARE_COMMAND = 0.4  # the rest of a command preview goes to its tail


def spill_writer(state_dir: Path | None, session_id: str, redactor: Redactor,
                 stem: str) -> Callable[[str], Path | None]:
    """What cap_result saves an oversized text with: redacted, into the session's spill
    folder under <state_dir>/out/; None when there is no state directory or the file
    cannot be written."""
    def write(content: str) -> Path | None:
        if state_dir is None:
            return None
        try:
            return spill_text(redactor.redact(content), spill_folder(state_dir, session_id),
                              stem)
        except OSError:
            return None

    return write


def _cut_lines(text: str, chars: int) -> str:
    """The longest prefix of whole lines within `chars` (at least part of one line)."""
    if len(text) <= chars:
        return text
    cut = text.rfind("\n", 0, chars)
    return text[: cut + 1] if cut > chars // 2 else text[:chars]


def _cut_tail(text: str, chars: int) -> str:
    if chars <= 0:
        return ""
    if len(text) <= chars:
        return text
    start = text.find("\n", len(text) - chars)
    return text[start + 1 :] if 0 <= start < len(text) - chars // 2 else text[-chars:]


def _preview(kind: str, content: str, chars: int, meta: Mapping[str, Any]) -> tuple[str, str]:
    """(preview text, how-to-continue hint) for a result cut to about `chars`."""
    if kind == "command":
        head = _cut_lines(content, int(chars * HEAD_SHARE_COMMAND))
        tail = _cut_tail(content, chars - len(head))
        omitted = len(content) - len(head) - len(tail)
        body = f"{head}\n[... {omitted} characters omitted ...]\n{tail}"
        return body, "read the full output from that file in parts (offset/limit)"
    head = _cut_lines(content, chars)
    template = meta.get("continue")
    if kind == "file" and isinstance(template, str):
        line = int(meta.get("offset") or 1) + head.count("\n")
        return head, "continue with " + template.replace("{line}", str(line))
    if kind == "matches":
        return head, "narrow the pattern or path, or read the file with all matches"
    return head, "read the rest from that file in parts (offset/limit)"


def cap_result(
    content: str,
    meta: Mapping[str, Any],
    limit_tokens: int,
    count: Callable[[str], int],
    spill_to: Callable[[str], Path | None],
) -> tuple[str, Path | None]:
    """Return `content` unchanged when it fits `limit_tokens`, else a shaped preview
    that fits, naming the file `spill_to(content)` wrote (None: not saved)."""
    tokens = count(content)
    if tokens <= limit_tokens:
        return content, None
    path = spill_to(content)
    kind = str(meta.get("kind") or "generic")
    where = f"saved to {path}" if path else "not saved"
    chars = max(200, int(len(content) * (limit_tokens - 80) / max(tokens, 1)))
    for _ in range(10):  # shrink until the preview with its notice fits
        body, hint = _preview(kind, content, chars, meta)
        notice = (
            f"\n[output cut to fit the context window: {len(content)} characters, "
            f"~{tokens} tokens in full, {where}; {hint}]"
        )
        text = body.rstrip("\n") + notice
        used = count(text)
        if used <= limit_tokens or chars <= 200:
            return text, path
        # Shrink by the overshoot (at least 2 %), not a fixed step: a long spill path in
        # the notice should cost the preview a few characters, not a fifth of it.
        chars = int(chars * min(0.98, limit_tokens / used))
    return text, path
