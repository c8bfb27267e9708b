"""The only code that formats output for people (rich). Fed by agent events."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from swival.events import Compacted, Event, Notice, ToolFinished, TurnFinished
from swival.messages import ToolCall, ToolResult

KEY_ARGUMENTS = ("file_path", "path", "pattern", "command", "action", "thought")
LINE_WIDTH = 100


def stderr_console() -> Console:
    """Diagnostics go to stderr; rich honours NO_COLOR and the terminal width itself."""
    return Console(stderr=True, highlight=False)


def key_argument(call: ToolCall) -> str:
    """The one argument that best says what a call does, shortened to one line."""
    for name in KEY_ARGUMENTS:
        value = call.arguments.get(name)
        if isinstance(value, str) and value:
            text = " ".join(value.split())
            return text if len(text) <= 60 else text[:57] + "..."
    return ""


def outcome(result: ToolResult) -> str:
    """A few words on how a tool call went, from its metadata."""
    meta: dict[str, Any] = dict(result.meta)
    if result.is_error:
        first = result.content.strip().splitlines()[0] if result.content.strip() else "error"
        return first[:LINE_WIDTH]
    if "exit_code" in meta:
        return f"exit {meta['exit_code']}"
    if "matches" in meta:
        return f"{meta['matches']} matches"
    if meta.get("kind") == "file" and "shown" in meta:
        return f"{meta['shown']} of {meta.get('lines', '?')} lines"
    if "count" in meta:
        return f"{meta['count']} entries"
    if meta.get("changed"):
        return ", ".join(f"{kind} {path}" for path, kind in meta["changed"])
    return "ok"


def compaction_line(event: Compacted) -> str:
    what = "snapshot restore" if event.level == 0 else f"compaction level {event.level}"
    return (f"{what}: {event.tokens_before} → {event.tokens_after} tokens "
            f"({event.reason})")


class ProgressPrinter:
    """One-shot progress on stderr: one line per tool call, compactions and notices."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet

    def handle(self, event: Event) -> None:
        if isinstance(event, Notice) and event.level == "error":
            self.console.print(f"[red]{escape(event.text)}[/red]")
        if self.quiet:
            return
        if isinstance(event, ToolFinished):
            style = "red" if event.result.is_error else "dim"
            self.console.print(
                f"[{style}]• {event.call.name} {escape(key_argument(event.call))} — "
                f"{escape(outcome(event.result))}[/{style}]",
                soft_wrap=True,
            )
        elif isinstance(event, Compacted):
            self.console.print(f"[yellow]{escape(compaction_line(event))}[/yellow]")
        elif isinstance(event, Notice) and event.level != "error":
            self.console.print(f"[yellow]{escape(event.text)}[/yellow]")
        elif isinstance(event, TurnFinished) and event.reason == "max_turns":
            self.console.print(f"[red]{escape(event.answer)}[/red]")
