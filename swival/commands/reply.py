"""What a slash command returns, and the small helpers every command module shares."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from swival.agent import Agent
from swival.events import Compacted

ReplyLevel = Literal["info", "warning", "error"]


@dataclass(frozen=True)
class CommandReply:
    """What a command produced. `rows` (with `headers`) is a table shown after `text`;
    `events` are compactions it caused (for the status bar); `exit` ends the REPL."""

    text: str = ""
    level: ReplyLevel = "info"
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    events: tuple[Compacted, ...] = ()
    exit: bool = False
    footer: str = ""


Handler = Callable[[Agent, Sequence[str]], CommandReply]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    run: Handler = field(repr=False)
    flags: tuple[str, ...] = ()


def error(text: str) -> CommandReply:
    return CommandReply(text, level="error")


def parse_flags(args: Sequence[str], allowed: tuple[str, ...], usage: str,
                ) -> set[str] | CommandReply:
    """The flags given, or an error reply naming the unexpected argument and the usage."""
    unknown = [a for a in args if a not in allowed]
    if unknown:
        return error(f"Unexpected argument {unknown[0]!r}. Usage: {usage}")
    return set(args)
