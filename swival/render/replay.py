"""A resumed conversation, replayed compactly: the last few requests, the tool calls
each led to, and the start of each answer, so the person sees where they left off."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from swival.messages import Message
from swival.render.lines import key_argument, screen_text
from swival.tools.mentions import typed_request
from swival.words import clip, plural

EXCHANGES = 3  # requests replayed
TOOL_LINES = 4  # tool calls listed per request; the rest are counted
ANSWER_LINES = 4  # lines of each answer
WIDTH = 110  # longest replayed line; a narrower terminal gets shorter ones


def _requests(messages: Sequence[Message]) -> list[int]:
    """Indexes of the person's requests (harness notes, bracketed, are not requests)."""
    return [i for i, m in enumerate(messages)
            if m.role == "user" and not m.content.lstrip().startswith("[")]


def _exchange(messages: Sequence[Message], width: int) -> list[Text]:
    """One request's lines, none wider than `width`: text is cut between words."""
    request, rest = messages[0], messages[1:]
    first = typed_request(request.content)
    more = " …" if "\n" in first.strip() else ""
    head = screen_text(first.splitlines()[0] if first else "")
    lines = [Text("› " + clip(head, width - 2 - len(more)) + more, style="bold")]
    calls = [c for m in rest if m.role == "assistant" for c in m.tool_calls]
    for call in calls[:TOOL_LINES]:
        name = screen_text(call.name)
        lines.append(Text(f"  • {name} {key_argument(call, min(60, width - len(name) - 5))}",
                          style="dim"))
    if len(calls) > TOOL_LINES:
        extra = plural(len(calls) - TOOL_LINES, "more tool call")
        lines.append(Text(f"  … and {extra}", style="dim"))
    answers = [m for m in rest if m.role == "assistant" and not m.tool_calls and m.content]
    if answers:
        text = screen_text(answers[-1].content.strip()).splitlines()
        shown = text[:ANSWER_LINES] + (["…"] if len(text) > ANSWER_LINES else [])
        lines += [Text("  " + clip(line, width - 2), style="") for line in shown]
    return lines


def replay_lines(messages: Sequence[Message], exchanges: int = EXCHANGES,
                 width: int = WIDTH) -> list[Text]:
    """The lines that replay the last `exchanges` requests of `messages`, each on one
    line of at most `width` (and WIDTH) characters."""
    starts = _requests(messages)[-exchanges:]
    out: list[Text] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(messages)
        out += _exchange(messages[start:end], max(20, min(width, WIDTH)))
    return out
