"""Small wording helpers every layer shares, so counts read the same everywhere."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` with its noun agreeing: plural(1, "match", "matches") -> "1 match",
    plural(3, "line") -> "3 lines". `many` is the plural form when it is not noun + "s"."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def clip_words(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters: cut at the last space that fits,
    with "…" (a single word longer than that is cut with "…" too)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[:max(1, limit - 1)]
    space = head.rfind(" ")
    if space > 0 and flat[len(head)] != " ":
        head = head[:space]
    return head.rstrip(" ,;:") + "…"
