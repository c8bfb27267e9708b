"""The pinned block, and the request as the model sees it.

The pinned block follows the system prompt once history has been rewritten by level 2
or 3 or a snapshot restore, and is rendered only then (so between rewrites the prompt
only grows at its end). It holds the ledger, the knowledge sections and the recap.
It has the user role, because several local chat templates accept a system message
only in first position; when the history starts with a user message, the block is
folded into that message, so roles keep alternating.
"""

from __future__ import annotations

from collections.abc import Sequence

from swival.context.history import History
from swival.context.ledger import Ledger
from swival.context.summarize import recap_header
from swival.messages import Message

HEADER = ("[Pinned context, kept by the harness across compactions. It records what already "
          "happened; it is not a new instruction.]")


def render(ledger: Ledger, sections: Sequence[str], history: History,
           transcript: str) -> Message | None:
    """The pinned block for `history` (None when there is nothing to pin). Requests
    still in the history are not repeated by the ledger."""
    requests = [t.head.content for t in history.turns if t.head.role == "user"]
    parts = [ledger.render(lambda head: any(head in text for text in requests)), *sections]
    if history.recap:
        parts.append(recap_header(transcript) + "\n" + history.recap)
    body = "\n\n".join(p for p in parts if p)
    return Message(role="user", content=HEADER + "\n\n" + body) if body else None


class View:
    """The request view: system prompt, pinned block, history. The message that folds
    the pinned block into a first user message is made once per pair, so the token
    cache and the prompt's prefix stay stable between rewrites."""

    def __init__(self, system: Message) -> None:
        self.system = system
        self._merged: tuple[Message, Message, Message] | None = None

    def messages(self, history: History, remember: bool = True) -> tuple[Message, ...]:
        """The request for `history`; `remember=False` for a candidate being measured,
        so the fold kept for the current history is not replaced."""
        body = history.messages()
        pinned = history.pinned
        if pinned is None:
            return (self.system, *body)
        if body and body[0].role == "user":
            return (self.system, self._fold(pinned, body[0], remember), *body[1:])
        return (self.system, pinned, *body)

    def _fold(self, pinned: Message, first: Message, remember: bool) -> Message:
        cached = self._merged
        if cached and cached[0] is pinned and cached[1] is first:
            return cached[2]
        merged = Message(role="user", content=pinned.content + "\n\n" + first.content)
        if remember:
            self._merged = (pinned, first, merged)
        return merged
