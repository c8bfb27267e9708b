"""What comes into the conversation, cut to the window before it enters: a request
with what the harness attaches to it, and a tool result.

A request (the person's text) may take at most REQUEST_SHARE of the input budget;
longer, it is cut to its head and saved whole (the person is told: `Sent.cut`). Parts
attached to it (files and directories named with @) are each cut like a tool result,
to `tool_result_share` of the input budget at most, and together to what the request
leaves of REQUEST_SHARE: the smallest parts are placed first, so they arrive whole,
and the large ones share what is left. Notes from the harness follow, uncut.

A tool result is cut to `tool_result_share` of the input budget (caps.py). The result
handed back says what the model got: `meta["context_cut"]` (kept and total characters
and lines) when it was cut, and `meta["spill_path"]`, the file with the whole text
(relative to the project root when inside it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from swival.context.caps import Cut, cap_result
from swival.messages import ToolResult
from swival.words import percent

REQUEST_SHARE = 0.5  # a request and its attachments take at most this share of the budget
SMALLEST_PART = 64  # tokens an attached part gets at least, however full the request
Count = Callable[[str], int]
Save = Callable[[str, str], "str | None"]  # (stem, text) -> the saved file, as shown


class Part(Protocol):
    """Something attached to a request: `body` between an `opening` and a `closing`
    line, with the facts of how it was read (`meta`, as a tool result's)."""

    @property
    def opening(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def closing(self) -> str: ...
    @property
    def meta(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Sent:
    """What the model got of a request: `cut` when the person's text was cut, and for
    every attached part, in order, its Cut or None when it arrived whole."""

    cut: Cut | None = None
    parts: tuple[Cut | None, ...] = ()

    def notice(self) -> str:
        """For the person, when their text was cut: how much the model sees, and where
        the whole text is."""
        cut = self.cut
        if cut is None:
            return ""
        where = (f"the whole text is saved in {cut.saved}" if cut.saved
                 else "the rest was not saved (there is no state directory)")
        share = percent(cut.kept_chars, cut.total_chars)
        return (f"Your request is too long for the context window: the model sees its first "
                f"{cut.kept_chars:,} of {cut.total_chars:,} characters ({share}, "
                f"{cut.kept_lines:,} of {cut.total_lines:,} lines); {where}.")


class Intake:
    """Cuts what comes in (see the module docstring): `budget` is the input budget,
    `share` the tool_result_share, `count` our token count of a text, `save(stem,
    text)` saves a text whole and returns its path as shown (None: not saved)."""

    def __init__(self, budget: int, share: float, count: Count, save: Save) -> None:
        self.budget, self.share, self.count, self.save = budget, share, count, save

    def request(self, text: str, attached: tuple[str, Sequence[Part]], notes: str
                ) -> tuple[str, Sent]:
        """The user message for `text`, what is `attached` (a heading line and the
        parts) and the harness's `notes`; and what of it the model gets."""
        heading, parts = attached
        room = int(self.budget * REQUEST_SHARE)
        cut = cap_result(text, {"kind": "generic"}, room, self.count,
                         lambda whole: self.save("request", whole))
        shown = cut.text if cut else text
        room -= self.count(shown) + self.count(heading) + sum(
            self.count(p.opening + "\n\n" + p.closing) for p in parts)
        cuts: list[Cut | None] = [None] * len(parts)
        bodies = [p.body for p in parts]
        order = sorted(range(len(parts)), key=lambda i: self.count(parts[i].body))
        for place, i in enumerate(order):
            limit = max(SMALLEST_PART, min(int(self.budget * self.share),
                                           room // (len(order) - place)))
            found = cap_result(parts[i].body, parts[i].meta, limit, self.count,
                               lambda whole: self.save("attached", whole))
            cuts[i], bodies[i] = found, found.text if found else parts[i].body
            room -= self.count(bodies[i])
        blocks = [f"{p.opening}\n{body}\n{p.closing}"
                  for p, body in zip(parts, bodies, strict=True)]
        content = "\n\n".join(x for x in (shown, heading if parts else "", *blocks, notes)
                                if x)
        return content, Sent(cut, tuple(cuts))

    def tool_result(self, result: ToolResult, stem: str) -> ToolResult:
        """`result` as the model will see it: cut to the window when it is too long."""
        limit = max(SMALLEST_PART, int(self.budget * self.share))
        cut = cap_result(result.content, result.meta, limit, self.count,
                         lambda whole: self.save(stem, whole))
        if cut is None:
            return result
        meta: dict[str, Any] = {**result.meta, "context_cut": cut.facts()}
        if cut.saved:
            meta["spill_path"] = cut.saved
        return replace(result, content=cut.text, meta=meta)
