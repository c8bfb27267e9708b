"""Measuring a history: its size as a request, and what sending it would make the
server compute again.

A local server keeps the previous request in its cache and reuses it up to the first
token that differs. So sending `history` after `sent` costs the tokens after their
longest shared run of messages (all of them, pinned block included, when the pinned
block changed); of those, the messages added since `sent` are new anyway. What is
left is the cost of a rewrite: tokens the server had and must compute again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from swival.context.calibration import Calibration
from swival.context.history import History
from swival.context.pinned import View
from swival.context.storage import ExactCount
from swival.context.tokens import TokenCounter
from swival.messages import Message

REPLY_PRIMING = 3  # the tokens that open the reply (TokenCounter.messages adds them too)


def _identity(message: Message) -> object:
    """What names a message across a rewrite that shrinks it: a tool result by the call
    it answers, an assistant message by its calls, anything else by the object."""
    if message.role == "tool" and message.tool_call_id:
        return ("tool", message.tool_call_id)
    if message.tool_calls:
        return ("calls", tuple(c.id for c in message.tool_calls))
    return id(message)


EXACT_NEAR = 0.9  # share of the trigger from which the server's exact count is asked


class Measure:
    """Sizes and costs of histories; `exact`, where the server counts prompts itself
    (llama.cpp), calibrates on its count (see `count_exactly`)."""

    def __init__(self, counter: TokenCounter, calibration: Calibration, view: View,
                 schemas: Sequence[Mapping[str, Any]], exact: ExactCount | None = None
                 ) -> None:
        self.counter, self.calibration, self.view = counter, calibration, view
        self._schemas = tuple(schemas)
        self._schema_count: int | None = None
        self.exact = exact
        self._exactly: History | None = None  # the history last counted by the server

    @property
    def schema_tokens(self) -> int:
        """The tool schemas' tokens, counted on first use rather than when the engine is
        built: counting loads the tokenizer (~0.15 s), which the REPL does in the
        background once its prompt is up instead of before it."""
        if self._schema_count is None:
            self._schema_count = self.counter.schemas(self._schemas)
        return self._schema_count

    def set_schemas(self, schemas: Sequence[Mapping[str, Any]]) -> None:
        """The tool list changed: count these schemas from now on (and ask the server
        again: its count covered the old ones)."""
        self._schemas = tuple(schemas)
        self._schema_count = None
        self._exactly = None

    def parts(self, history: History) -> dict[str, int]:
        """Our own count of each part of the request (/context)."""
        count = self.counter.message
        by_role = {role: sum(count(m) for m in history.messages() if m.role == role)
                   for role in ("user", "assistant", "tool")}
        return {"system": count(self.view.system), "tools": self.schema_tokens,
                "pinned": count(history.pinned) if history.pinned else 0,
                "user": by_role["user"], "assistant": by_role["assistant"],
                "tool_results": by_role["tool"]}

    def raw(self, history: History, remember: bool = True) -> int:
        """Our uncalibrated count of the whole request (messages and tool schemas), from
        the turns' cached counts. `remember=False` for a candidate, so the fold kept for
        the current history is not replaced (pinned.View)."""
        count = self.counter.message
        head = count(self.view.system)
        if history.pinned is not None:
            view = self.view.messages(history, remember)
            folded = len(view) > 1 and history.turns and view[1] is not history.pinned
            head += count(view[1]) - (count(history.turns[0].head) if folded else 0)
        return head + history.tokens + REPLY_PRIMING + self.schema_tokens

    def tokens(self, history: History, remember: bool = True) -> int:
        return self.calibration.apply(self.raw(history, remember))

    def tail(self, history: History, sent: History) -> int:
        """Tokens of `history` after the longest run of messages it shares with `sent`
        (all of it, pinned block included, when the pinned block changed)."""
        if history.pinned is not sent.pinned:
            pinned = self.counter.message(history.pinned) if history.pinned else 0
            return history.tokens + pinned
        shared = 0
        for old, new in zip(sent.turns, history.turns, strict=False):
            if old is not new:
                break
            shared += 1
        if shared == len(history.turns):
            return 0
        first, same = history.turns[shared], 0
        if shared < len(sent.turns):  # the first differing turn may begin alike
            for old_message, new_message in zip(sent.turns[shared].messages, first.messages,
                                                strict=False):
                if old_message is not new_message:
                    break
                same += 1
        rest = sum(t.tokens for t in history.turns[shared + 1:])
        return rest + sum(self.counter.message(m) for m in first.messages[same:])

    def unsent(self, history: History, sent: History) -> int:
        """Tokens of `history` after the last message of `sent`: new to the server. That
        message may have been shrunk since (it is found by the call it answers)."""
        if not sent.turns:
            return history.tokens
        last = sent.turns[-1].messages[-1]
        # A rewrite never moves a message later, and servers that number calls per reply
        # ("call_0" every time) give later results the same call id: look no later than
        # where the message was, for the message itself, else the one it became.
        after = sum(len(t.messages) for t in history.turns) - sum(
            len(t.messages) for t in sent.turns)
        for same in (lambda m: m is last, lambda m: _identity(m) == _identity(last)):
            tokens, skip = 0, after
            for turn in reversed(history.turns):
                for message in reversed(turn.messages):
                    if skip <= 0 and same(message):
                        return tokens
                    skip -= 1
                    tokens += self.counter.message(message)
        return 0

    def cost(self, history: History, sent: History) -> int:
        """Tokens the server must compute again if `history` is sent after `sent`."""
        return max(0, self.tail(history, sent) - self.unsent(history, sent))

    def recount(self) -> None:
        """Another model (its own tokenizer): ask for the server's count again."""
        self._exactly = None

    def count_exactly(self, history: History, trigger: int) -> None:
        """Calibrate on the server's own count of `history` as a request, where it gives
        one: before the first request, then once per history when the estimate nears
        `trigger` (never far from it, where our estimate is good enough)."""
        if self.exact is None or history is self._exactly or (
                self._exactly is not None and self.tokens(history) < EXACT_NEAR * trigger):
            return
        self._exactly = history
        counted = self.exact(self.view.messages(history), self._schemas)
        if counted:
            self.calibration.exact(counted, self.raw(history))
