"""A resumed conversation, replayed compactly: the last few requests, the tool calls
each led to, and the start of each answer, so the person sees where they left off."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from swival.messages import Message
from swival.render.lines import key_argument, one_line, screen_text
from swival.tools.mentions import typed_request
from swival.words import plural

EXCHANGES = 3  # requests replayed
TOOL_LINES = 4  # tool calls listed per request; the rest are counted
ANSWER_LINES = 4  # lines of each answer
WIDTH = 110  # longest replayed line before it is cut (the console cuts further)


def _requests(messages: Sequence[Message]) -> list[int]:
    """Indexes of the person's requests (harness notes, bracketed, are not requests)."""
    return [i for i, m in enumerate(messages)
            if m.role == "user" and not m.content.lstrip().startswith("[")]


def _exchange(messages: Sequence[Message]) -> list[Text]:
    request, rest = messages[0], messages[1:]
    first = typed_request(request.content)
    more = " …" if "\n" in first.strip() else ""
    lines = [Text("› " + one_line(first.splitlines()[0] if first else "", WIDTH) + more,
                  style="bold")]
    calls = [c for m in rest if m.role == "assistant" for c in m.tool_calls]
    for call in calls[:TOOL_LINES]:
        lines.append(Text(f"  • {screen_text(call.name)} {key_argument(call, 60)}",
                          style="dim"))
    if len(calls) > TOOL_LINES:
        extra = plural(len(calls) - TOOL_LINES, "more tool call")
        lines.append(Text(f"  … and {extra}", style="dim"))
    answers = [m for m in rest if m.role == "assistant" and not m.tool_calls and m.content]
    if answers:
        text = screen_text(answers[-1].content.strip()).splitlines()
        shown = text[:ANSWER_LINES] + (["…"] if len(text) > ANSWER_LINES else [])
        lines += [Text("  " + line, style="") for line in shown]
    return lines


def replay_lines(messages: Sequence[Message], exchanges: int = EXCHANGES) -> list[Text]:
    """The lines that replay the last `exchanges` requests of `messages`."""
    starts = _requests(messages)[-exchanges:]
    out: list[Text] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(messages)
        out += _exchange(messages[start:end])
    for line in out:
        line.no_wrap, line.overflow = True, "ellipsis"
    return out
