"""The task tool's children: a subagent runs on the parent's model with a fresh context
engine, some of the parent's tools, and a turn limit of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.config import Settings
from swival.context.engine import ContextEngine, ServerAid, Storage
from swival.context.storage import Memory
from swival.errors import SwivalError
from swival.events import Event, TurnFinished
from swival.prompts import system_prompt
from swival.session.disk import hold_spills, session_index
from swival.state import SpillClaim
from swival.tools.base import ChildRun, SubagentTotals, Tool
from swival.tools.registry import ToolRegistry
from swival.tools.task import withheld

CHARS_PER_TOKEN = 3  # for the subagent's answer limit: errs towards fewer characters
SUBAGENT_NOTE = (
    "[You are a subagent: another agent gave you this job. It sees only your final answer, "
    "at most {limit} characters, and nothing else of this conversation. Your tools: "
    "{tools}. Work until you can answer, then reply with the answer alone: the facts "
    "asked for, with file names and line numbers where they help.]"
)
STOPPED = {
    "max_turns": "it reached its limit of {turns} model calls without a final answer "
    "(subagent_max_turns).",
    "output_limit": "its replies were cut by the output limit again and again.",
}


class Subagents:
    """Runs the task tool's children for one session (`spawn`, handed to the tool through
    its ToolContext). A child gets a fresh context engine on the parent's model and
    window, of the tools the parent is offered now (in plan mode only read-only ones),
    those that `widen` allows besides the read-only ones (never task), the parent's
    approvals, policies and sandbox, and its own turn limit. Its transcript is recorded
    in the session index under the parent's id, so it is never taken for a stranger nor
    offered as the session to continue."""

    def __init__(self, settings: Settings, parent: Agent, widen: tuple[str, ...] | None):
        self.settings, self.parent, self.widen = settings, parent, widen
        # The children's spill folders, held as long as the parent runs: its history
        # may quote what they found, saved paths included.
        self.held: list[SpillClaim | None] = []

    def spawn(self, prompt: str, limit: int, on_event: Callable[[Event], None]) -> ChildRun:
        """Run one child on `prompt` to its end; its events go to `on_event`. Ctrl-C and
        SIGTERM propagate once the child's conversation is closed; any other failure
        comes back as a ChildRun with the reason."""
        child, limit = self._child(limit)
        finished, error = None, ""
        try:
            for event in child.run_turn(prompt):
                if isinstance(event, TurnFinished):
                    finished = event
                else:
                    on_event(event)
        except KeyboardInterrupt:
            self._count(child.interrupted())
            raise
        except SwivalError as exc:
            finished, error = child.interrupted(), self.parent.config.redactor.redact(str(exc))
        assert finished is not None  # run_turn always ends with one
        self._count(finished)
        path = child.context.transcript_path
        shown = str(path.relative_to(self.settings.project_root)) if path else "(not saved)"
        reason = "error" if error else finished.reason
        why = error or STOPPED.get(reason, "").format(turns=self.settings.subagent_max_turns)
        return ChildRun(
            reason,
            answer=finished.answer,
            error=why,
            limit=limit,
            transcript=shown,
            turns=finished.turns,
            tool_calls=finished.tool_calls,
            usage=finished.usage,
        )

    def _count(self, finished: TurnFinished) -> None:
        self.parent.tool_ctx.subagents.add(finished.usage, finished.reason == "done")

    def _child(self, limit: int) -> tuple[Agent, int]:
        """A child agent, and the answer limit it was told (the task tool's, at most
        the window-scaled share of one tool result)."""
        parent, settings = self.parent, self.settings
        tools = [
            tool for name in parent.tools.names if (tool := self._child_tool(name)) is not None
        ]
        given = [tool.spec.name for tool in tools]
        read_only = self.widen == () or parent.tools.read_only  # plan mode: children too
        registry = ToolRegistry(
            tools,
            withheld={  # what the parent is told about a name, the child is told too
                **parent.tools.withheld,
                **{name: withheld(name, given, read_only)
                   for name in parent.tools.every_name if name not in given},
            },
        )
        context = self._context(registry)
        share = context.settings.tool_result_share * context.budget.input_budget
        limit = min(limit, int(share * CHARS_PER_TOKEN))
        if context.storage.state_dir is not None:
            self.held.append(hold_spills(context.storage.state_dir, context.session_id))
        tool_ctx = replace(
            parent.tool_ctx,
            read_files={},
            session_id=context.session_id,
            spawn=None,
            on_event=lambda _event: None,
            subagents=SubagentTotals(),
        )
        child = Agent(
            parent.provider,
            registry,
            context,
            tool_ctx,
            AgentConfig(
                max_turns=settings.subagent_max_turns,
                temperature=settings.temperature,
                redactor=parent.config.redactor,
                subagent=True,
            ),
        )
        child.note(SUBAGENT_NOTE.format(limit=limit, tools=", ".join(registry.names)))
        return child, limit

    def _child_tool(self, name: str) -> Tool | None:
        """The parent's tool `name` as a child gets it: whole, narrowed (a read-only
        child's mcp_list and mcp_call offer only MCP tools marked read-only), or not at all."""
        tool, widen = self.parent.tools.get(name), self.widen
        narrow = getattr(tool, "read_only_part", None)
        if tool is None or name == "task":
            return None
        if narrow is not None and widen is not None and "mcp_call" not in widen:
            return narrow()
        return tool if tool.read_only or widen is None or name in widen else None

    def _context(self, registry: ToolRegistry) -> ContextEngine:
        """A fresh engine like the parent's, its todos in memory, its transcript next to
        the parent's as `<parent id>-task<n>`."""
        parent = self.parent.context
        root, index, folder = self.settings.project_root, session_index(), parent.storage.state_dir
        number = self.parent.tool_ctx.subagents.tasks
        session_id = f"{parent.session_id}-task{number}"
        while folder and (folder / "sessions" / f"{session_id}.jsonl").exists():
            number += 1
            session_id = f"{parent.session_id}-task{number}"
        provider, owner = self.parent.provider, parent.session_id
        storage = (
            Storage(
                folder,
                session_id,
                self.parent.config.redactor,
                keep_todos=False,
                on_create=lambda path: index.record(root, path.stem, owner),
                on_seal=lambda path, size, digest: index.seal(root, path.stem, size, digest),
            )
            if folder
            else Memory(session_id)
        )
        return ContextEngine(
            replace(parent.settings, proactive_summaries=False),
            system_prompt(root),
            registry.schemas(),
            storage=storage,
            server=ServerAid(
                make_summarizer(provider, self.settings.temperature),
                getattr(provider, "count_prompt", None),
            ),
        )
