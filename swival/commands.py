"""Slash commands as plain functions: each takes the agent and its arguments and returns a
`CommandReply` (text, an optional table, events) that the REPL renders. Nothing here prints.

    /compact [--drop]   /save [label]   /restore [--force]   /unsave   /clear
    /context            /todo           /sessions            /mcp      /help     /exit
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from swival.agent import Agent
from swival.config import user_state_dir
from swival.context.snapshot import Restored
from swival.events import Compacted
from swival.providers.factory import spent
from swival.providers.hosted import PRICE_SOURCE
from swival.state import SessionIndex, sessions_dir

ReplyLevel = Literal["info", "warning", "error"]
MCP_USAGE = "/mcp [restart [NAME...] | refresh]"
USER_TURN = 0  # compactions asked for by the user are not tied to a model turn

BREAKDOWN_LABELS = {
    "system": "system prompt", "tools": "tool schemas", "pinned": "pinned knowledge",
    "user": "user messages", "assistant": "assistant messages", "tool_results": "tool results",
}


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


def _error(text: str) -> CommandReply:
    return CommandReply(text, level="error")


def _flags(args: Sequence[str], allowed: tuple[str, ...], usage: str) -> set[str] | CommandReply:
    """The flags given, or an error reply naming the unexpected argument and the usage."""
    unknown = [a for a in args if a not in allowed]
    if unknown:
        return _error(f"Unexpected argument {unknown[0]!r}. Usage: {usage}")
    return set(args)


def compaction_text(event: Compacted) -> str:
    saved = event.tokens_before - event.tokens_after
    what = "Snapshot restore" if event.level == 0 else f"Level {event.level}"
    outcome = (f"saved {saved}" if saved >= 0 else
               f"{-saved} more: the pinned summary outweighs the little it replaced")
    again = (f"; the server computes {event.reprocessed} cached tokens again"
             if event.reprocessed else "")
    return f"{what}: {event.tokens_before} → {event.tokens_after} tokens ({outcome}{again})."


def cmd_compact(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Level 1 (shrink old tool results); with --drop levels 1 then 2 (drop and recap
    low-value turns). Reports the tokens saved."""
    flags = _flags(args, ("--drop",), "/compact [--drop]")
    if isinstance(flags, CommandReply):
        return flags
    level, reason = (2, "/compact --drop") if "--drop" in flags else (1, "/compact")
    event = agent.context.compact(level, reason, USER_TURN)
    if event is None:
        what = "levels 1 and 2" if level == 2 else "level 1"
        return CommandReply(f"Nothing to compact at {what}: no old tool results or turns to "
                            "shrink yet.", level="warning")
    return CommandReply("Compacted. " + compaction_text(event), events=(event,))


def cmd_save(agent: Agent, args: Sequence[str]) -> CommandReply:
    saved = agent.context.save(" ".join(args).strip() or None)
    name = f" '{saved.label}'" if saved.label else ""
    previous = f" '{saved.previous}'" if saved.previous else ""
    replaced = f" It replaces the checkpoint{previous}." if saved.replaced else ""
    return CommandReply(f"Checkpoint{name} saved.{replaced} /restore collapses everything after "
                        "it into a summary written by the model; /unsave cancels it.")


REFUSALS = {
    "empty": "Nothing to collapse since the checkpoint.",
    "no summarizer": "No summarizer is available, so /restore cannot write a summary.",
    "summary failed": "The model could not write a summary; nothing was collapsed.",
}


def cmd_restore(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Ask the model to summarize everything since the checkpoint and collapse it."""
    flags = _flags(args, ("--force",), "/restore [--force]")
    if isinstance(flags, CommandReply):
        return flags
    outcome = agent.context.restore(force="--force" in flags, turn=USER_TURN)
    if isinstance(outcome, Restored):
        return CommandReply(f"Collapsed {outcome.collapsed} messages into a summary written by "
                            f"the model; it stays pinned.\n{compaction_text(outcome.event)}",
                            events=(outcome.event,))
    if outcome.why == "dirty":
        return CommandReply(
            f"Files or commands changed things {outcome.since} ({', '.join(outcome.changes)}); "
            "a summary would replace the record of those changes. If that is what you want, "
            "use `/restore --force`.", level="warning")
    return CommandReply(REFUSALS.get(outcome.why, "Nothing was collapsed."), level="warning")


def cmd_unsave(agent: Agent, args: Sequence[str]) -> CommandReply:
    cancelled = agent.context.cancel()
    if not cancelled.existed:
        return CommandReply("There is no checkpoint to cancel.")
    name = f" '{cancelled.label}'" if cancelled.label else ""
    return CommandReply(f"Checkpoint{name} cancelled; nothing was collapsed.")


def cmd_clear(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Forget the conversation, thinking, todos, snapshots, the ledger and which files were
    read (so writes need a fresh read)."""
    agent.clear()
    return CommandReply("Cleared the conversation, thinking, todos, snapshots, ledger and "
                        "file tracking. The transcript on disk is kept.")


def cmd_context(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Usage by category against the window, when each compaction level runs, and what
    compaction has cost the server's cache."""
    usage = agent.context.usage()
    window = usage.window
    parts = zip(BREAKDOWN_LABELS.values(), (usage.system, usage.tools, usage.pinned,
                                             usage.user, usage.assistant, usage.tool_results),
                strict=True)
    rows = [(label, str(value), _share(value, window)) for label, value in parts]
    rows += [("= in use", str(usage.used), _share(usage.used, window)),
             ("reserved for the reply", str(usage.output_reserve),
              _share(usage.output_reserve, window)),
             ("free", str(usage.free), _share(usage.free, window))]
    footer = (
        f"Window {window} tokens; input budget {usage.input_budget} (the window minus the "
        "reply reserve).\nCompaction thresholds:\n"
        f"  level 1 (shrink old tool results) when the prompt reaches {usage.trigger} tokens "
        f"({_share(usage.trigger, window)} of the window) — /compact;\n"
        f"  level 2 (drop low-value turns for a recap) if still above {usage.target} "
        f"({_share(usage.target, window)}) — /compact --drop;\n"
        f"  level 3 (keep pinned knowledge, a recap and the last two turns) if still "
        f"above {usage.target}.\n"
        f"Compactions so far: {usage.compactions}. The server computed {usage.reprocessed} "
        "cached tokens again because of them and of changes to the tool list (/mcp).")
    cost = spent(agent.provider)
    if cost is not None:
        footer += f"\nCost so far: ${cost:.4f} ({PRICE_SOURCE})."
    return CommandReply("Context use:", headers=("category", "tokens", "% of window"),
                        rows=tuple(rows), footer=footer)


def _share(value: int, window: int) -> str:
    return f"{100 * value / window:.1f}%" if window else "-"


def cmd_todo(agent: Agent, args: Sequence[str]) -> CommandReply:
    items = agent.context.todos()
    if not items:
        return CommandReply("The todo list is empty.")
    rows = tuple((str(i), "done" if done else "open", text) for i, text, done in items)
    open_count = sum(1 for _, _, done in items if not done)
    return CommandReply(f"Todos ({open_count} open):", headers=("id", "state", "item"), rows=rows)


def session_rows(folder: Path, ids: Sequence[str], current: str | None,
                 ) -> list[tuple[str, ...]]:
    """One row per session in `ids` (transcripts in `folder`), newest first: id, last
    active, messages, first request."""
    rows: list[tuple[str, ...]] = []
    for path in (folder / f"{sid}.jsonl" for sid in sorted(ids, reverse=True)):
        count, first = 0, ""
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                record = _record(line)
                if record.get("role") in ("user", "assistant", "tool"):
                    count += 1
                    if not first and record.get("role") == "user":
                        first = " ".join(str(record.get("content", "")).split())[:60]
        started = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        mark = " (this one)" if path.stem == current else ""
        rows.append((path.stem + mark, started, str(count), first))
    return rows


def _record(line: str) -> dict:
    """The message a transcript line records, or {} for other records (amends, rewrites)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return {}
    if not isinstance(data, dict) or data.get("type") != "message":
        return {}
    inner = data.get("message")
    return inner if isinstance(inner, dict) else {}


def cmd_sessions(agent: Agent, args: Sequence[str]) -> CommandReply:
    """The sessions this user's Swival recorded in this project (the session index);
    transcript files that came from elsewhere are counted, never listed."""
    root = agent.tool_ctx.root
    folder, index = sessions_dir(root), SessionIndex(user_state_dir(os.environ))
    rows = session_rows(folder, index.transcripts(root), agent.context.session_id)
    strangers = index.strangers(root)
    note = (f"\n{strangers} other session file(s) in {folder} were not recorded by Swival for "
            "you (they may have come with the repository); they are not listed and cannot "
            "be resumed.") if strangers else ""
    if not rows:
        return CommandReply(f"No saved sessions in this project yet.{note}")
    return CommandReply(
        f"Sessions in {folder}:",
        headers=("id", "last active", "messages", "first request"), rows=tuple(rows),
        footer="Resume one with `swival --resume ID`, or the latest with `swival --continue`."
        + note,
    )


def cmd_mcp(agent: Agent, args: Sequence[str]) -> CommandReply:
    """The MCP servers: state, tools and schema tokens. `restart [NAME...]` stops and
    starts servers again, `refresh` lists their tools again; both change the tool list,
    which makes the server re-process the whole prompt."""
    from swival.mcp.manager import McpTools  # not on the start-up path

    mcp = agent.config.tool_source
    if not isinstance(mcp, McpTools):
        return CommandReply("No MCP servers in this session: configure them as "
                            "[mcp_servers.NAME] tables (see docs/configuration.md), and "
                            "leave out --no-mcp.")
    notes: list[str] = []
    if args[:1] == ["restart"]:
        notes = mcp.restart(args[1:])
    elif list(args) == ["refresh"]:
        notes = mcp.refresh()
    elif args:
        return _error(f"Unexpected argument {args[0]!r}. Usage: {MCP_USAGE}")
    footer = (f"{mcp.summary()}\n/mcp restart [NAME] starts servers again, /mcp refresh "
              "lists their tools again; either way the tool list changes and the server "
              "re-processes the whole prompt.")
    return CommandReply("\n".join(notes) or "MCP servers:",
                        level="warning" if notes else "info",
                        headers=("server", "transport", "state", "tools", "schema tokens",
                                 "sent"), rows=tuple(mcp.rows()), footer=footer)


def cmd_help(agent: Agent, args: Sequence[str]) -> CommandReply:
    rows = tuple((c.usage, c.help) for c in COMMANDS)
    keys = "\n".join((
        "Keys:",
        "  Enter                      send",
        "  Esc then Enter, Alt-Enter  insert a newline (pasted text stays one message)",
        "  Up/Down, Ctrl-R            previous requests, search them",
        "  Tab                        complete commands, their flags and file paths",
        "  Ctrl-C                     cancel the running turn, or clear the line",
        "  Ctrl-D, /exit              leave",
    ))
    return CommandReply("Commands:", headers=("command", "what it does"), rows=rows, footer=keys)


def cmd_exit(agent: Agent, args: Sequence[str]) -> CommandReply:
    return CommandReply("Bye.", exit=True)


COMMANDS: tuple[Command, ...] = (
    Command("compact", "/compact [--drop]", "Shrink old tool results (level 1); --drop also "
            "replaces low-value turns by a recap (level 2). Reports tokens saved.", cmd_compact,
            ("--drop",)),
    Command("save", "/save [label]", "Set a checkpoint here (like the snapshot tool).",
            cmd_save),
    Command("restore", "/restore [--force]", "Have the model summarize everything since the "
            "checkpoint and replace it by that summary. --force if files changed since.",
            cmd_restore, ("--force",)),
    Command("unsave", "/unsave", "Cancel the checkpoint.", cmd_unsave),
    Command("clear", "/clear", "Start over: drop the conversation, thinking, todos, snapshots, "
            "ledger and file tracking.", cmd_clear),
    Command("context", "/context", "Show context use by category and the compaction "
            "thresholds.", cmd_context),
    Command("todo", "/todo", "Show the model's todo list.", cmd_todo),
    Command("sessions", "/sessions", "List this project's saved sessions.", cmd_sessions),
    Command("mcp", MCP_USAGE, "List the MCP servers (state, tools, schema tokens); restart "
            "them or list their tools again.", cmd_mcp, ("restart", "refresh")),
    Command("help", "/help", "List commands and keys.", cmd_help),
    Command("exit", "/exit", "Leave (also Ctrl-D).", cmd_exit),
)
COMMANDS_BY_NAME = {c.name: c for c in COMMANDS}
ALIASES = {"quit": "exit", "q": "exit", "?": "help"}


def is_command(line: str) -> bool:
    """A line is a command when it starts with '/' followed by a name (not a path like /etc/x)."""
    head = line.strip().split(maxsplit=1)[0] if line.strip() else ""
    return head.startswith("/") and "/" not in head[1:]


def suggest(name: str) -> str | None:
    """The command meant by a mistyped name: a unique prefix, else the closest spelling."""
    names = [c.name for c in COMMANDS]
    prefixed = [n for n in names if n.startswith(name)] if name else []
    if len(prefixed) == 1:
        return prefixed[0]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return close[0] if close else None


def dispatch(line: str, agent: Agent) -> CommandReply:
    """Run one slash command line. Unknown names get a did-you-mean. A command that cannot
    run now says why in its reply; infrastructure failures raise SwivalError."""
    words = line.strip().split()
    name = words[0][1:].lower() if words else ""
    name = ALIASES.get(name, name) or "help"
    command = COMMANDS_BY_NAME.get(name)
    if command is None:
        hint = suggest(name)
        tip = f" Did you mean /{hint}?" if hint else ""
        return _error(f"Unknown command /{name}.{tip} Type /help for the list.")
    return command.run(agent, words[1:])
