"""The commands about the session: /model, /undo, /plan, /mcp, /sessions."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from swival.agent import Agent
from swival.commands.context import compaction_text
from swival.commands.reply import CommandReply, error, parse_flags, stray
from swival.config import user_state_dir
from swival.providers.base import ProviderInfo
from swival.providers.discovery import ModelChoice
from swival.providers.factory import Connector
from swival.state import SessionIndex, sessions_dir
from swival.tools.mentions import typed_request
from swival.tools.undo import UndoRefused
from swival.words import agree, clip, plural

MCP_USAGE = "/mcp [restart [NAME...] | refresh]"
REPROCESSED = ("The tool list changed, so the server processes the whole prompt again on the "
               "next request (tool schemas come first).")
UNDO_SCOPE = ("/undo covers edits by write_file and edit_file only; files changed by commands "
              "are not tracked.")


def cmd_undo(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Revert the file edits (write_file, edit_file) of the newest request not yet undone;
    refused when a file changed since, unless --force. The model is told with the next
    request."""
    flags = parse_flags(args, ("--force",), "/undo [--force]")
    if isinstance(flags, CommandReply):
        return flags
    outcome = agent.undo_last(force="--force" in flags)
    if outcome is None:
        return CommandReply("Nothing to undo: no file edit by write_file or edit_file in this "
                            f"session is left to revert. {UNDO_SCOPE}", level="warning")
    if isinstance(outcome, UndoRefused):
        them = "it" if len(outcome.changed) == 1 else "them"
        return CommandReply(
            f"Nothing was undone: {', '.join(outcome.changed)} changed on disk since the agent "
            f"wrote {them} (by you, a command or another program), and undoing would lose "
            f"that change. `/undo --force` reverts {them} anyway.", level="warning")
    what = "; ".join(part for part in (
        f"restored {', '.join(outcome.restored)}" if outcome.restored else "",
        f"removed {', '.join(outcome.removed)} (created by it)" if outcome.removed else "")
        if part)
    agent.note(f"[The user ran /undo: the file edits of the request \"{outcome.label}\" were "
               f"reverted ({what or 'nothing could be restored'}). Changes made by commands "
               "were not reverted. Read a file again before editing it.]")
    lines = [f"Undid the file edits of \"{outcome.label}\": {what or 'nothing restored'}.",
             UNDO_SCOPE]
    if outcome.overwritten:
        lines.append(f"Your later changes to {', '.join(outcome.overwritten)} were "
                     "discarded (--force).")
    if outcome.failed:
        lines.append(f"Could not restore {'; '.join(outcome.failed)}. /undo tries again.")
    if outcome.remaining:
        lines.append(f"{plural(outcome.remaining, 'earlier request')} can still be undone.")
    return CommandReply("\n".join(lines), level="warning" if outcome.failed else "info")


def _window(info: ProviderInfo) -> str:
    return f"window {info.window.describe()}"


def cmd_model(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Without a name, the models the server offers; with one, switch to it for the rest
    of the session (the window detected afresh, the conversation compacted if it no
    longer fits)."""
    connector, info = agent.config.connector, agent.provider.info
    if len(args) > 1:
        return stray(" ".join(args), "/model [name]", " (one name: a model's name has "
                     "no spaces).")
    if connector is None:
        return error(f"This session cannot switch models (using {info.model}, "
                      f"{_window(info)}).")
    if not args:
        return _model_list(agent, connector)
    wanted = args[0]
    offered = connector.models()
    names = [choice.name for choice in offered or ()]
    if offered is not None and wanted not in names and f"{wanted}:latest" not in names:
        close = difflib.get_close_matches(wanted, names, n=1, cutoff=0.5)
        tip = f" Did you mean {close[0]}?" if close else ""
        return error(f"{info.base_url} offers no model named {wanted!r}.{tip} /model lists "
                      "what it offers.")
    provider = connector.connect(wanted)
    before, window = info.window.budget_tokens, provider.info.window.budget_tokens
    # MCP schemas first: the engine compacts for the new window with the schemas it gets.
    retooled = _replan(agent, replace(agent.context.budget, window=window).input_budget
                       ) if window != before else []
    events = tuple(agent.use_provider(provider))
    new = provider.info
    if new.model == info.model and new.window == info.window:
        return CommandReply(f"Still using {new.model}, {_window(new)}.")
    lines = [f"Now using {new.model}, {_window(new)}."]
    if new.model != info.model and agent.context.history:
        lines.append("The server processes the whole conversation again on the next request "
                     "(what it cached was for the previous model).")
    elif new.window.budget_tokens != before:
        lines.append(f"The window changed from {before} tokens."
                     + (f" {REPROCESSED}" if retooled and agent.context.history else ""))
    if not new.window.known:
        lines.append(f"Its window is read again once the first request reaches it (LM Studio "
                     f"loads a model then); until then the budget assumes "
                     f"{new.window.budget_tokens} tokens.")
    if new.provider == "ollama":
        lines.append(f"Ollama gets num_ctx {new.window.budget_tokens} with every request "
                     "from now on.")
    lines += retooled
    lines += [f"The conversation no longer fit the new window: {compaction_text(e)}"
              for e in events]
    return CommandReply("\n".join(lines), level="warning" if events or retooled else "info",
                        events=events)


def _replan(agent: Agent, input_budget: int) -> list[str]:
    """Fit the MCP servers' schemas to a new input budget; what the user should be told."""
    source = agent.config.tool_source
    return source.replan(input_budget) if source is not None else []


def _model_list(agent: Agent, connector: Connector) -> CommandReply:
    info = agent.provider.info
    offered = connector.models()
    current = f"Using {info.model}, {_window(info)}."
    if offered is None:
        return CommandReply(f"{current} A hosted provider's models are not listed here; "
                            "/model NAME switches to another (a litellm model string).")
    if not offered:
        return CommandReply(f"{current} {info.base_url} lists no models.")
    rows = tuple((choice.name + (" (current)" if choice.name == info.model else ""),
                  choice.state, _window_cell(choice)) for choice in offered)
    return CommandReply(f"Models on {info.provider} {info.base_url}:",
                        headers=("model", "state", "window"), rows=rows,
                        footer=f"{current} /model NAME switches for the rest of the session "
                               "(Tab completes names).")


def _window_cell(choice: ModelChoice) -> str:
    """The window column of /model's table: what the server says, else the most the model
    can be loaded with, else when it becomes known."""
    if choice.window:
        return str(choice.window)
    if choice.limit:
        return f"up to {choice.limit}"
    return "read on switch" if choice.state == "installed" else "unknown"


def cmd_plan(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Toggle plan mode (read-only tools only)."""
    on = not agent.tools.read_only
    notes = agent.set_read_only(on) or []  # the MCP servers' schemas fitted to the mode
    if on:
        text = (f"Plan mode on: the model only gets tools that change nothing "
                f"({', '.join(agent.tools.names)}) and is told so with your next request. "
                "/plan again gives the others back.")
    else:
        text = ("Plan mode off: the model can edit files and run commands again (as the "
                "approval settings allow).")
    if agent.context.history:  # before the first request nothing is cached yet
        text += " " + REPROCESSED
    if notes:
        text += "\n" + "\n".join(notes)
    return CommandReply(text)


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
                        first = clip(typed_request(str(record.get("content", ""))), 60)
        started = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        if path.stem == current:  # the id alone in its cell, so it is never cut
            started = "now (this one)"
        rows.append((path.stem, started, str(count), first))
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
    root = agent.project_root
    folder, index = sessions_dir(root), SessionIndex(user_state_dir(os.environ))
    rows = session_rows(folder, index.transcripts(root), agent.context.session_id)
    strangers = index.strangers(root)
    they = agree(strangers, "it", "they")
    note = (f"\n{plural(strangers, 'other session file')} in {folder} "
            f"{agree(strangers, 'was', 'were')} not recorded by Swival for you ({they} may "
            f"have come with the repository); {they} {agree(strangers, 'is', 'are')} not "
            "listed and cannot be resumed.") if strangers else ""
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
    starts servers again, `refresh` lists their tools again; only when that changes the
    tool list does the server re-process the prompt (the reply then says so)."""
    from swival.mcp.manager import McpTools  # not on the start-up path

    wrong = _mcp_stray(args)
    if wrong:
        return stray(wrong, MCP_USAGE)
    mcp = agent.config.tool_source
    if not isinstance(mcp, McpTools):
        return CommandReply("No MCP servers in this session: configure them as "
                            "[mcp_servers.NAME] tables in a config file (swival "
                            "--init-config stdout shows one), and leave out --no-mcp.")
    notes: list[str] = []
    if args[:1] == ["restart"]:
        notes = mcp.restart(args[1:])
    elif args:
        notes = mcp.refresh()
    footer = (f"{mcp.summary()}\n/mcp restart [NAME] starts servers again, /mcp refresh "
              "lists their tools again; if their tools changed, the server re-processes the "
              "prompt on the next request.")
    return CommandReply("\n".join(notes) or "MCP servers:",
                        level="warning" if notes else "info",
                        headers=("server", "transport", "state", "tools", "schema tokens",
                                 "sent"), rows=tuple(mcp.rows()), footer=footer)


def _mcp_stray(args: Sequence[str]) -> str:
    """The first argument /mcp does not take, or ""."""
    if not args or args[0] == "restart":
        return ""
    return args[0] if args[0] != "refresh" else (args[1] if len(args) > 1 else "")
