"""Recaps: asking the model (through the agent's tool-free summarizer) to condense
messages that compaction removes, while keeping the request inside the window.

The dropped messages are rendered as plain text (no tool-call structure, so no
server can reject an orphaned result), cut per message, and sent in chunks that fit;
each chunk's recap is folded into the next ("rolling" recap). When there is more than
MAX_CHUNKS worth of text, the oldest part is left to the transcript file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from swival import prompts
from swival.messages import Message

Summarizer = Callable[[str, Sequence[Message]], str | None]

MARKER = re.compile(r"\[(\d+) earlier messages were removed to fit the context window; "
                    r"they are kept in [^\]]*\]")
MESSAGE_CHARS = 1500  # one message's share of a recap request
MAX_CHUNKS = 3
REQUEST_OVERHEAD = 64


def render_message(message: Message, limit: int = MESSAGE_CHARS) -> str:
    """One message as recap input: role, text, calls, cut to head and tail."""
    text = message.content.strip()
    if len(text) > limit:
        half = limit // 2
        text = f"{text[:half]}\n[... {len(text) - limit} characters ...]\n{text[-half:]}"
    calls = "".join(
        f"\n-> {c.name}({c.arguments_json()[:300]})" for c in message.tool_calls
    )
    label = f"TOOL RESULT ({message.name})" if message.role == "tool" and message.name else (
        message.role.upper()
    )
    return f"{label}: {text}{calls}"


def recap_header(transcript: str) -> str:
    return (
        "## Recap of earlier work\n"
        "(A factual record of what already happened, written to save space. It is not a "
        f"new instruction. The full transcript is in {transcript}.)"
    )


@dataclass
class Recapper:
    """Builds recaps with `summarize`. `request_tokens` is what one request may use
    (input budget of the window); `recap_tokens` the size asked of the recap."""

    summarize: Summarizer
    count: Callable[[str], int]
    transcript: str
    request_tokens: int
    recap_tokens: int

    def instructions(self, focus: str | None = None) -> str:
        """The recap prompt; `focus` is what the user asked it to keep in particular."""
        words = max(80, int(self.recap_tokens * 0.7))
        template = prompts.load("summary")
        text = template.replace("{max_words}", str(words)).replace("{transcript}",
                                                                   self.transcript)
        if focus:
            text += (f"\n\nThe user gave this recap a focus: {focus}\nGive that the most "
                     "room, with every detail the messages hold about it; keep the rest "
                     "short.")
        return text

    def _chunks(self, entries: list[str], room: int) -> list[str]:
        chunks: list[list[str]] = [[]]
        used = 0
        for entry in entries:
            size = self.count(entry) + 2
            if size > room:  # one entry alone too big: cut it to fit
                entry = entry[: max(200, room * 3)]
                size = self.count(entry) + 2
            if used + size > room and chunks[-1]:
                chunks.append([])
                used = 0
            chunks[-1].append(entry)
            used += size
        kept = chunks[-MAX_CHUNKS:]
        skipped = sum(len(c) for c in chunks[:-MAX_CHUNKS])
        texts = ["\n\n".join(c) for c in kept]
        if skipped:
            texts[0] = (f"[{skipped} older messages are only in {self.transcript}]\n\n"
                        + texts[0])
        return texts

    def recap(self, messages: Sequence[Message], previous: str | None,
              focus: str | None = None) -> str | None:
        """A recap merging `previous` with `messages` (guided by `focus`), or None when
        the model failed."""
        instructions = self.instructions(focus)
        fixed = self.count(instructions) + 2 * self.recap_tokens + REQUEST_OVERHEAD
        room = max(200, self.request_tokens - fixed)
        current = previous
        for chunk in self._chunks([render_message(m) for m in messages], room):
            body = "Messages to recap:\n\n" + chunk
            if current:
                body = "Earlier recap:\n" + current + "\n\n" + body
            try:
                answer = self.summarize(instructions, (Message(role="user", content=body),))
            except Exception:  # the recap is optional: any failure means "use the fallback"
                return None
            if not answer or not answer.strip():
                return None
            current = self._bounded(answer.strip())
        return current

    def _bounded(self, text: str) -> str:
        limit = int(self.recap_tokens * 1.5)
        if self.count(text) <= limit:
            return text
        return text[: limit * 3] + "\n[recap cut to fit]"


def fallback_recap(previous: str | None, removed: int, checkpoints: str | None,
                   transcript: str, limit: int) -> str:
    """The recap when the model wrote none: the previous recap, the checkpoint
    summaries and a marker naming how many messages went and where they are kept. An
    earlier marker is folded into the new one, so markers never stack; at most
    `limit` characters (the newest)."""
    if previous:
        found = MARKER.search(previous)
        if found:
            removed += int(found.group(1))
            previous = MARKER.sub("", previous).strip()
    marker = (f"[{removed} earlier messages were removed to fit the context window; "
              f"they are kept in {transcript}.]")
    parts = [p for p in (previous, checkpoints, marker) if p]
    text = "\n\n".join(dict.fromkeys(parts))
    return text if len(text) <= limit else text[-limit:]
