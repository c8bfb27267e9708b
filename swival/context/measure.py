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

from swival.context.api import ExactCount
from swival.context.calibration import Calibration
from swival.context.history import History
from swival.context.pinned import View
from swival.context.tokens import TokenCounter

REPLY_PRIMING = 3  # the tokens that open the reply (TokenCounter.messages adds them too)


class Measure:
    def __init__(self, counter: TokenCounter, calibration: Calibration, view: View,
                 schemas: Sequence[Mapping[str, Any]]) -> None:
        self.counter, self.calibration, self.view = counter, calibration, view
        self._schemas = tuple(schemas)
        self._schema_count: int | None = None

    @property
    def schema_tokens(self) -> int:
        """The tool schemas' tokens, counted on first use rather than when the engine is
        built: counting loads the tokenizer (~0.15 s), which the REPL does in the
        background once its prompt is up instead of before it."""
        if self._schema_count is None:
            self._schema_count = self.counter.schemas(self._schemas)
        return self._schema_count

    def set_schemas(self, schemas: Sequence[Mapping[str, Any]]) -> None:
        """The tool list changed: count these schemas from now on."""
        self._schemas = tuple(schemas)
        self._schema_count = None

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
        """Tokens of `history` after the last message of `sent`: new to the server."""
        if not sent.turns:
            return history.tokens
        last = sent.turns[-1].messages[-1]
        tokens = 0
        for turn in reversed(history.turns):
            for message in reversed(turn.messages):
                if message is last:
                    return tokens
                tokens += self.counter.message(message)
        return 0

    def cost(self, history: History, sent: History) -> int:
        """Tokens the server must compute again if `history` is sent after `sent`."""
        return max(0, self.tail(history, sent) - self.unsent(history, sent))

    def count_exactly(self, history: History, exact: ExactCount,
                      schemas: Sequence[Mapping[str, Any]]) -> None:
        """Calibrate on the server's own count of `history` as a request, if it gives one."""
        counted = exact(self.view.messages(history), schemas)
        if counted:
            self.calibration.exact(counted, self.raw(history))
