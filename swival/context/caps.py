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
from dataclasses import dataclass
from typing import Any

HEAD_SHARE_COMMAND = 0.4  # the rest of a command preview goes to its tail


@dataclass(frozen=True)
class Cut:
    """A result cut to fit: `text` is what the model gets (the preview and a notice),
    `saved` where the whole text is, as the model and the person are told (None: not
    saved); the sizes compare the preview with the text that was cut."""

    text: str
    saved: str | None
    kept_chars: int
    total_chars: int
    kept_lines: int
    total_lines: int

    def facts(self) -> dict[str, int]:
        """For `ToolResult.meta["context_cut"]`: what the model got of the result."""
        return {"kept_chars": self.kept_chars, "total_chars": self.total_chars,
                "kept_lines": self.kept_lines, "total_lines": self.total_lines}


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


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


def _preview(kind: str, content: str, chars: int, meta: Mapping[str, Any]
             ) -> tuple[str, tuple[str, ...], str]:
    """(preview text, the parts of `content` it shows, how-to-continue hint) for a
    result cut to about `chars`."""
    if kind == "command":
        head = _cut_lines(content, int(chars * HEAD_SHARE_COMMAND))
        tail = _cut_tail(content, chars - len(head))
        omitted = len(content) - len(head) - len(tail)
        body = f"{head}\n[... {omitted} characters omitted ...]\n{tail}"
        return body, (head, tail), "read the full output from that file in parts (offset/limit)"
    head = _cut_lines(content, chars)
    template = meta.get("continue")
    if kind == "file" and isinstance(template, str):
        line = int(meta.get("offset") or 1) + head.count("\n")
        return head, (head,), "continue with " + template.replace("{line}", str(line))
    if kind == "matches":
        return head, (head,), "narrow the pattern or path, or read the file with all matches"
    return head, (head,), "read the rest from that file in parts (offset/limit)"


def _whole(content: str, tokens: int, meta: Mapping[str, Any],
           save: Callable[[str], str | None]) -> tuple[str | None, str]:
    """Where the whole text is and how the notice describes it. A tool that saved the
    whole text itself (`meta["spill_path"]`) is not saved again: the notice gives that
    file and the tool's full size (`meta["total_chars"]`) when it declares one."""
    saved = meta.get("spill_path")
    if isinstance(saved, str) and saved:
        total = meta.get("total_chars")
        size = f"{total} characters in full" if isinstance(total, int) else "the whole text"
        return saved, f"{size}, saved to {saved}"
    path = save(content)
    where = f"saved to {path}" if path else "not saved"
    return path, f"{len(content)} characters, ~{tokens} tokens in full, {where}"


def cap_result(content: str, meta: Mapping[str, Any], limit_tokens: int,
               count: Callable[[str], int], save: Callable[[str], str | None]) -> Cut | None:
    """None when `content` fits `limit_tokens`; else a shaped preview that fits, with a
    notice naming where the whole text is (`save(content)` writes it and returns the
    path to show, or None when it cannot)."""
    tokens = count(content)
    if tokens <= limit_tokens:
        return None
    saved, whole = _whole(content, tokens, meta, save)
    kind = str(meta.get("kind") or "generic")
    chars = max(200, int(len(content) * (limit_tokens - 80) / max(tokens, 1)))
    for _ in range(10):  # shrink until the preview with its notice fits
        body, parts, hint = _preview(kind, content, chars, meta)
        text = body.rstrip("\n") + f"\n[output cut to fit the context window: {whole}; {hint}]"
        used = count(text)
        if used <= limit_tokens or chars <= 200:
            break
        # Shrink by the overshoot (at least 2 %), not a fixed step: a long spill path in
        # the notice should cost the preview a few characters, not a fifth of it.
        chars = int(chars * min(0.98, limit_tokens / used))
    total_chars, total_lines = _totals(content, meta)
    return Cut(text, saved, sum(len(p) for p in parts), total_chars,
               sum(_lines(p) for p in parts), total_lines)


def _totals(content: str, meta: Mapping[str, Any]) -> tuple[int, int]:
    """The size of the whole result: `content`'s, or, when the tool sent only the head
    of a text it saved whole (`spill_path`), the sizes it declares for that text."""
    chars, lines = meta.get("total_chars"), meta.get("total_lines")
    if not meta.get("spill_path") or not isinstance(chars, int):
        return len(content), _lines(content)
    return chars, lines if isinstance(lines, int) else _lines(content)
