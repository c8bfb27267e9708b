"""Small wording helpers every layer shares, so counts read the same everywhere."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` with its noun agreeing: plural(1, "match", "matches") -> "1 match",
    plural(3, "line") -> "3 lines". `many` is the plural form when it is not noun + "s"."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def clip(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters: when longer, cut after the last
    whole word that fits, with "…" (only a first word longer than that is cut inside)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[:max(1, limit - 1)]
    if flat[len(head)] != " " and " " in head:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:") + "…"


def agree(count: int, one: str, many: str) -> str:
    """The word that agrees with `count`: agree(1, "was", "were") -> "was"."""
    return one if count == 1 else many


def lines_of(shown: int, total: int) -> str:
    """How many of a text's lines something holds: "120 lines" when all of them,
    "40 of 120 lines" when fewer."""
    return plural(total, "line") if shown >= total else f"{shown} of {total} lines"


def percent(part: float, whole: float, places: int = 0) -> str:
    """`part` as a share of `whole`, rounded to `places` decimals by the one rule every
    figure on screen follows: percent(897, 1000) -> "90%", percent(897, 1000, 1) -> "89.7%"."""
    return f"{100 * part / (whole or 1):.{places}f}%"  # nothing of nothing: 0%
