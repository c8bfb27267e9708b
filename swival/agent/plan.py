"""Plan mode as the model hears of it: a note when the mode the tools are in differs from
what the conversation tells the model now, so however often /plan was toggled between
two requests, the model never gets contradicting notes."""

from __future__ import annotations

from collections.abc import Sequence

from swival.messages import Message

READ_ONLY_ON = (
    "[Plan mode: from now on you only have tools that change nothing ({}). Do "
    "not try to edit files or run commands: explain, or write a plan for the user "
    "to approve.]"
)
READ_ONLY_OFF = "[Plan mode is over: all your tools are available again ({}).]"
_READ_ONLY_ON_HEAD, _READ_ONLY_OFF_HEAD = READ_ONLY_ON[:24], READ_ONLY_OFF[:20]


def mode_note(read_only: bool, tools: Sequence[str], history: Sequence[Message]) -> str:
    """The plan-mode note for the next request: one, saying the mode the tools are in,
    when that differs from what `history` tells the model now (its newest plan-mode
    note; none: all tools), else "". When compaction dropped the note that told it,
    the next request tells it again."""
    if read_only == _told_read_only(history):
        return ""
    return (READ_ONLY_ON if read_only else READ_ONLY_OFF).format(", ".join(tools))


def _told_read_only(history: Sequence[Message]) -> bool:
    """The mode the newest plan-mode note still in the conversation announced."""
    for message in reversed(history):
        if message.role != "user":
            continue
        on, off = (
            message.content.rfind(_READ_ONLY_ON_HEAD),
            message.content.rfind(_READ_ONLY_OFF_HEAD),
        )
        if on >= 0 or off >= 0:
            return on > off
    return False
