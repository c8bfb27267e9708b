"""The commands about the context: /compact, /save, /restore, /unsave, /clear, /context,
/todo."""

from __future__ import annotations

from collections.abc import Sequence

from swival.agent import Agent
from swival.commands.reply import CommandReply, parse_flags, stray
from swival.context.snapshot import Restored
from swival.events import Compacted
from swival.providers.factory import spent
from swival.providers.pricemap import PRICE_SOURCE
from swival.words import percent, plural

USER_TURN = 0  # compactions asked for by the user are not tied to a model turn

BREAKDOWN_LABELS = {
    "system": "system prompt", "tools": "tool schemas", "pinned": "kept notes",
    "user": "user messages", "assistant": "assistant messages", "tool_results": "tool results",
}


def compaction_text(event: Compacted) -> str:
    what = {0: "Snapshot restore", 4: "Emergency compaction"}.get(event.level,
                                                                 f"Level {event.level}")
    note = f" {event.note}" if event.note else ""
    return f"{what}: {_figures(event)}.{note}"


def _figures(event: Compacted) -> str:
    """"1400 → 900 tokens (saved 500; ...)": what a compaction did to the prompt."""
    saved = event.tokens_before - event.tokens_after
    outcome = (f"saved {saved}" if saved >= 0 else
               f"{-saved} more: the summary outweighs the little it replaced")
    again = (f"; the server computes {event.reprocessed} cached tokens again"
             if event.reprocessed else "")
    return f"{event.tokens_before} → {event.tokens_after} tokens ({outcome}{again})"


def cmd_compact(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Level 1 (shrink old tool results); with --drop, or with focus text, levels 1 then
    2 (drop low-value turns for a recap, which the focus guides). Reports the tokens
    saved. Only a leading `--drop` is an option: later words are the focus, even ones
    starting with `--` (`/compact keep the --verbose flag work`)."""
    drop = bool(args) and args[0] == "--drop"
    words = list(args[1:] if drop else args)
    if words[:1] and words[0].startswith("--"):
        return stray(words[0], "/compact [--drop] [focus]", " (words starting with -- may "
                     "follow the first word of the focus).")
    focus = agent.config.redactor.redact(" ".join(words))
    level = 2 if drop or focus else 1
    reason = "/compact" + (" --drop" if drop else "") + (" (focused)" if focus else "")
    before = agent.context.estimate()
    try:
        event = agent.context.compact(level, reason, USER_TURN, focus or None)
    except KeyboardInterrupt:
        return _interrupted(before, agent.context.estimate())
    if event is None:
        what = "levels 1 and 2" if level == 2 else "level 1"
        return CommandReply(f"Nothing to compact at {what}: no old tool results or turns to "
                            "shrink yet.", level="warning")
    kept = f"\nThe recap's focus: {focus}" if focus and event.level == 2 else ""
    return CommandReply("Compacted. " + compaction_text(event) + kept, events=(event,))


def _interrupted(before: int, after: int) -> CommandReply:
    """Ctrl-C while the model wrote the recap: level 1 had run by then and stays."""
    if after >= before:
        return CommandReply("Interrupted; nothing was compacted.", level="warning")
    return CommandReply("Interrupted while the model wrote the recap (level 2), which was not "
                        "applied. Level 1 had already shrunk old tool results, and that stays: "
                        f"{before} → {after} tokens.", level="warning")


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
    flags = parse_flags(args, ("--force",), "/restore [--force]")
    if isinstance(flags, CommandReply):
        return flags
    outcome = agent.context.restore(force="--force" in flags, turn=USER_TURN)
    if isinstance(outcome, Restored):
        return CommandReply(f"Collapsed {plural(outcome.collapsed, 'message')} into a summary "
                            f"written by the model, kept for the rest of the session: "
                            f"{_figures(outcome.event)}.", events=(outcome.event,))
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
    """Forget the conversation, thinking, todos, snapshots, the kept notes (ledger) and
    which files were read (so writes need a fresh read)."""
    agent.clear()
    return CommandReply("Cleared the conversation, thinking, todos, snapshots, kept notes "
                        "and which files were read. The transcript on disk is kept.")


def cmd_context(agent: Agent, args: Sequence[str]) -> CommandReply:
    """Usage by category against the window, when each compaction level runs, and what
    compaction has cost the server's cache."""
    usage = agent.context.usage()
    window = usage.window
    parts = zip(BREAKDOWN_LABELS.values(), (usage.system, usage.tools, usage.pinned,
                                             usage.user, usage.assistant, usage.tool_results),
                strict=True)
    rows = [(label, str(value), _share(value, window)) for label, value in parts]
    rows.append(("= in use", str(usage.counted), _share(usage.counted, window)))
    if usage.used != usage.counted:  # the server's tokenizer counts otherwise
        rows.append((f"  as the server counts it (×{usage.factor:.2f})", str(usage.used),
                     _share(usage.used, window)))
    rows += [("reserved for the reply", str(usage.output_reserve),
              _share(usage.output_reserve, window)),
             ("free", str(usage.free), _share(usage.free, window))]
    footer = (
        "Kept notes are what every compaction keeps (your requests, files changed, "
        "commands, errors, summaries). The parts are Swival's own count; the server's count "
        "(learned from its replies) is what compaction acts on.\n"
        f"Window {window} tokens; input budget {usage.input_budget} (the window minus the "
        "reply reserve).\nCompaction thresholds:\n"
        f"  level 1 (shrink old tool results) once the prompt reaches {usage.trigger} tokens "
        f"({_share(usage.trigger, window)} of the window), after a small turn, and before "
        f"it passes {usage.input_budget} — /compact;\n"
        f"  level 2 (drop low-value turns for a recap) if still above {usage.target} "
        f"({_share(usage.target, window)}) — /compact --drop;\n"
        f"  level 3 (keep the kept notes, a recap and the last two turns) if still "
        f"above {usage.target};\n"
        f"  emergency (the kept notes and the last turn, no model call) when no recap "
        f"comes, from {usage.emergency} tokens, or if nothing else "
        "fits.\n"
        f"Compactions so far: {usage.compactions}. Cached tokens the server computed again "
        f"because of compactions and changes to the tool list (/mcp, /plan): "
        f"{usage.reprocessed}.")
    children = agent.subagent_totals
    if children.tasks:
        failed = f", {children.failed} without an answer" if children.failed else ""
        footer += (f"\nSubagents: {plural(children.tasks, 'task')}{failed}, "
                   f"{children.prompt_tokens} prompt + "
                   f"{children.completion_tokens} output tokens in their own contexts "
                   "(not in the figures above).")
    cost = spent(agent.provider)
    if cost is not None:
        footer += f"\nCost so far: ${cost:.4f} ({PRICE_SOURCE})."
    return CommandReply("Context use:", headers=("category", "tokens", "% of window"),
                        rows=tuple(rows), footer=footer)


def _share(value: int, window: int) -> str:
    return percent(value, window, 1) if window else "-"


def cmd_todo(agent: Agent, args: Sequence[str]) -> CommandReply:
    items = agent.context.todos()
    if not items:
        return CommandReply("The todo list is empty.")
    rows = tuple((str(i), "done" if done else "open", text) for i, text, done in items)
    open_count = sum(1 for _, _, done in items if not done)
    return CommandReply(f"Todos ({open_count} open):", headers=("id", "state", "item"), rows=rows)
