"""Slash commands as plain functions: each takes the agent and its arguments and returns a
`CommandReply` (text, an optional table, events) that the REPL renders. Nothing here prints.

    /compact [--drop] [focus]   /save [label]     /restore [--force]   /unsave   /clear
    /model [name]               /undo [--force]   /plan   /context   /todo   /sessions
    /mcp [restart|refresh]      /help [command]   /exit

A command given an argument it does not take does nothing and says so.

`context.py` holds the commands about the context, `session.py` those about the session
(models, undo, plan mode, saved sessions); this module the table, /help and dispatch.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from swival.agent import Agent
from swival.commands.context import (
    cmd_clear,
    cmd_compact,
    cmd_context,
    cmd_restore,
    cmd_save,
    cmd_todo,
    cmd_unsave,
)
from swival.commands.reply import Command, CommandReply, error, stray
from swival.commands.session import (
    MCP_USAGE,
    cmd_mcp,
    cmd_model,
    cmd_plan,
    cmd_sessions,
    cmd_undo,
)

__all__ = ["COMMANDS", "Command", "CommandReply", "dispatch", "is_command", "suggest"]


def cmd_help(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Every command and the keys; `/help NAME` that command alone."""
    if len(args) > 1:
        return stray(" ".join(args), "/help [command]")
    if args:
        wanted = args[0].lstrip("/").lower()
        command = COMMANDS_BY_NAME.get(ALIASES.get(wanted, wanted))
        if command is None:
            hint = suggest(wanted)
            tip = f" Did you mean /{hint}?" if hint else ""
            return error(f"There is no command /{wanted}.{tip} /help lists them all.")
        return CommandReply(f"{command.usage}{_aliases(command.name)}: {command.help}")
    rows = tuple((c.usage + _aliases(c.name), c.help) for c in COMMANDS)
    # At most 58 columns wide, so a 60-column terminal does not break the alignment.
    keys = "\n".join((
        "Keys:",
        "  Enter          send",
        "  Alt-Enter      insert a newline (or Esc then Enter); a",
        "                 paste stays one message",
        "  Up/Down        previous requests; Ctrl-R searches them",
        "  Tab            complete commands, their flags, model",
        "                 names, file paths (after @ too)",
        "  @path          attach that file or directory",
        "  Ctrl-C         cancel the running turn, or clear the",
        "                 line; twice on an empty prompt: leave",
        "  Ctrl-D, /exit  leave (or /quit)",
    ))
    return CommandReply("Commands:", headers=("command", "what it does"), rows=rows, footer=keys)


def _aliases(name: str) -> str:
    """" (or /quit, /q)" for a command with other names, else ""."""
    others = [f"/{alias}" for alias, target in ALIASES.items() if target == name]
    return f" (or {', '.join(others)})" if others else ""


def cmd_exit(agent: Agent, args: Sequence[str]) -> CommandReply:
    return CommandReply("Bye.", exit=True)


COMMANDS: tuple[Command, ...] = (
    Command("compact", "/compact [--drop] [focus]", "Shrink old tool results (level 1); "
            "--drop also replaces low-value turns by a recap (level 2), which focus text "
            "guides. Reports tokens saved.", cmd_compact, ("--drop",), free=True),
    Command("save", "/save [label]", "Set a checkpoint here (like the snapshot tool).",
            cmd_save, free=True),
    Command("restore", "/restore [--force]", "Have the model summarize everything since the "
            "checkpoint and replace it by that summary. --force if files changed since.",
            cmd_restore, ("--force",)),
    Command("unsave", "/unsave", "Cancel the checkpoint.", cmd_unsave),
    Command("clear", "/clear", "Start over: drop the conversation, thinking, todos, snapshots, "
            "kept notes and which files were read.", cmd_clear),
    Command("model", "/model [name]", "List the server's models, or switch to one (its "
            "window detected afresh).", cmd_model, free=True),
    Command("undo", "/undo [--force]", "Revert the file edits of the last request (tool "
            "edits only); repeat to go further back. --force if files changed since.",
            cmd_undo, ("--force",)),
    Command("plan", "/plan", "Toggle plan mode: only tools that change nothing.", cmd_plan),
    Command("context", "/context", "Show context use by category and the compaction "
            "thresholds.", cmd_context),
    Command("todo", "/todo", "Show the model's todo list.", cmd_todo),
    Command("sessions", "/sessions", "List this project's saved sessions.", cmd_sessions),
    Command("mcp", MCP_USAGE, "List the MCP servers (state, tools, schema tokens); restart "
            "them or list their tools again.", cmd_mcp, ("restart", "refresh"), free=True),
    Command("help", "/help [command]", "List commands and keys, or say what one command "
            "does.", cmd_help, free=True),
    Command("exit", "/exit", "Leave (also Ctrl-D).", cmd_exit),
)
COMMANDS_BY_NAME = {c.name: c for c in COMMANDS}
ALIASES = {"quit": "exit", "q": "exit", "?": "help"}
# difflib's similarity a suggestion needs: "contxt", "hlep", "comapct" reach it; "foo" is
# not taken for "todo" (0.57).
SUGGEST_CUTOFF = 0.7


def is_command(line: str) -> bool:
    """A line is a command when it starts with '/' followed by a name (not a path like /etc/x)."""
    head = line.strip().split(maxsplit=1)[0] if line.strip() else ""
    return head.startswith("/") and "/" not in head[1:]


def suggest(name: str) -> str | None:
    """The command meant by a mistyped name: a unique prefix, else a close spelling (one
    or two letters off, swapped or missing), else None."""
    names = [c.name for c in COMMANDS] + list(ALIASES)
    prefixed = [n for n in names if n.startswith(name)] if name else []
    if len(prefixed) == 1:
        return prefixed[0]
    close = difflib.get_close_matches(name, names, n=1, cutoff=SUGGEST_CUTOFF)
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
        return error(f"Unknown command /{name}.{tip} Type /help for the list.")
    args = words[1:]
    if args and not (command.flags or command.free):
        return stray(" ".join(args), command.usage)
    return command.run(agent, args)
