"""The conversation as a value.

`History` is an immutable sequence of turns — a user message, or an assistant message
with the tool results that answer it — plus the pinned block and the recap it holds.
Every turn carries its token count (our raw count, made once) and every tool result
the `Facts` the harness knows about it. Passes (passes.py) are functions from one
History to another, so a rewrite can be measured — its size, and how many tokens the
server must compute again — before it is chosen. A turn that a pass leaves alone is
the very same object afterwards, which is what keeps the prompt's prefix identical.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from swival.messages import Message, ToolCall, ToolResult

Count = Callable[[Message], int]


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Facts:
    """What the harness knows about one tool result. Everything comes from what the
    tool declares — whether it is read-only, and `ToolResult.meta` (kind, path, lines,
    pattern, matches, exit_code, changed) — never from the tool's name. `kind` is the
    output's shape (command, matches, file, listing, generic), or "thought" and
    "summary" for the results the engine itself writes for knowledge effects."""

    tool: str
    kind: str = "generic"
    path: str | None = None
    lines: int | None = None
    pattern: str | None = None
    matches: int | None = None
    is_error: bool = False
    changed: bool = False  # the call changed files
    read_only: bool = True  # the tool cannot change the workspace

    @classmethod
    def of(cls, call: ToolCall, result: ToolResult, read_only: bool) -> Facts:
        return cls.from_meta(call.name, result.meta, result.is_error, read_only)

    @classmethod
    def from_meta(cls, tool: str, meta: Mapping[str, Any], is_error: bool,
                  read_only: bool) -> Facts:
        return cls(
            tool=tool, kind=str(meta.get("kind") or "generic"), path=_text(meta.get("path")),
            lines=_number(meta.get("lines")), pattern=_text(meta.get("pattern")),
            matches=_number(meta.get("matches")),
            is_error=is_error or meta.get("exit_code") not in (None, 0),
            changed=bool(meta.get("changed")), read_only=read_only)


@dataclass(frozen=True, eq=False)
class Turn:
    """One turn: `messages[0]` is a user or assistant message, the rest are the tool
    results answering it. `facts` has one entry per message (None but for results);
    `tokens` is our raw count of the messages."""

    messages: tuple[Message, ...]
    facts: tuple[Facts | None, ...]
    tokens: int

    @classmethod
    def of(cls, messages: tuple[Message, ...], facts: tuple[Facts | None, ...],
           count: Count) -> Turn:
        return cls(messages, facts, sum(count(m) for m in messages))

    @property
    def head(self) -> Message:
        return self.messages[0]

    @property
    def results(self) -> tuple[tuple[Message, Facts | None], ...]:
        return tuple(zip(self.messages[1:], self.facts[1:], strict=True))

    def answered(self, message: Message, facts: Facts | None, count: Count) -> Turn:
        """This turn with one more tool result."""
        return Turn(self.messages + (message,), self.facts + (facts,),
                    self.tokens + count(message))

    def with_last(self, message: Message, count: Count) -> Turn:
        """This turn with its last message replaced (a note appended to it)."""
        return Turn(self.messages[:-1] + (message,), self.facts,
                    self.tokens - count(self.messages[-1]) + count(message))


@dataclass(frozen=True)
class History:
    """The conversation the model sees, without the system prompt. `pinned` is the
    pinned block (ledger, knowledge, recap), rendered at rewrites only; `recap` is the
    recap of what compaction removed, kept to be merged into the next one."""

    turns: tuple[Turn, ...] = ()
    pinned: Message | None = None
    recap: str | None = None

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.turns)

    def messages(self) -> tuple[Message, ...]:
        return tuple(m for t in self.turns for m in t.messages)

    def add(self, message: Message, facts: Facts | None, count: Count) -> History:
        """Append a message: a tool result joins the last turn, anything else starts one."""
        if message.role == "tool" and self.turns and self.turns[-1].head.role == "assistant":
            return replace(self, turns=self.turns[:-1]
                           + (self.turns[-1].answered(message, facts, count),))
        return replace(self, turns=self.turns + (Turn.of((message,), (facts,), count),))

    def extends(self, other: History) -> bool:
        """Whether this is `other` with messages appended, nothing before them changed."""
        return (self.pinned is other.pinned and len(self.turns) >= len(other.turns)
                and all(a is b for a, b in zip(other.turns, self.turns, strict=False)))

    def with_turns(self, turns: tuple[Turn, ...]) -> History:
        return replace(self, turns=turns)

    def last_message(self) -> Message | None:
        return self.turns[-1].messages[-1] if self.turns else None

    def noted(self, note: str, count: Count) -> History | None:
        """This history with `note` after the text of its last message, when that is a
        tool result (None otherwise)."""
        last = self.last_message()
        if last is None or last.role != "tool":
            return None
        amended = replace(last, content=last.content + "\n\n" + note)
        return self.with_turns(self.turns[:-1] + (self.turns[-1].with_last(amended, count),))
