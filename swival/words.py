"""Small wording helpers every layer shares, so counts read the same everywhere."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` with its noun agreeing: plural(1, "match", "matches") -> "1 match",
    plural(3, "line") -> "3 lines". `many` is the plural form when it is not noun + "s"."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"
