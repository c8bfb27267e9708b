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
    """A slash command. `flags` are the words it accepts (its handler checks them);
    `free` says it takes words of its own (a label, a name, a focus). A command with
    neither is refused, before it runs, when given any argument."""

    name: str
    usage: str
    help: str
    run: Handler = field(repr=False)
    flags: tuple[str, ...] = ()
    free: bool = False


def error(text: str) -> CommandReply:
    return CommandReply(text, level="error")


def parse_flags(args: Sequence[str], allowed: tuple[str, ...], usage: str,
                ) -> set[str] | CommandReply:
    """The flags given, or an error reply naming the unexpected argument and the usage."""
    unknown = [a for a in args if a not in allowed]
    if unknown:
        return stray(unknown[0], usage)
    return set(args)


def stray(argument: str, usage: str, note: str = "") -> CommandReply:
    """The reply to an argument a command does not take: it did nothing."""
    name = usage.split()[0]
    if name == usage:
        return error(f"{name} takes no arguments, so it did nothing (given: {argument}). "
                     f"Type {name} alone.")
    return error(f"{name} does not take {argument!r}, so it did nothing. Usage: {usage}{note}")
