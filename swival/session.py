"""The composition root: builds a provider, tools, context engine and agent from settings.

Layer 5, shared by the one-shot runner and the REPL (layer 6): the only module that
knows every component.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.config import Settings, literal_key_warning, redactor_for, user_state_dir
from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.context.storage import Memory
from swival.errors import ConfigError, SwivalError, UsageError
from swival.events import Event, TurnFinished
from swival.prompts import system_prompt
from swival.providers.base import Provider
from swival.providers.factory import Connector, connect
from swival.redaction import Redactor
from swival.state import (
    SessionIndex,
    SpillClaim,
    claim_spills,
    prepare_state_dir,
    sessions_dir,
    spill_folder,
    undo_folder,
)
from swival.tools.approval import Approvals, EditPolicy
from swival.tools.base import ChildRun, SubagentTotals, Tool, ToolContext
from swival.tools.catalog import session_registry, subagent_tools
from swival.tools.fetch_policy import FetchPolicy
from swival.tools.policy import CommandPolicy, Workspace, resolve_mode
from swival.tools.registry import ToolRegistry
from swival.tools.sandbox import Sandbox, sandbox_from_settings
from swival.tools.task import withheld
from swival.tools.undo import UndoJournal
from swival.words import agree, percent, plural

if TYPE_CHECKING:
    from swival.mcp.manager import McpTools

OVERHEAD_WARNING_SHARE = 0.25
CHARS_PER_TOKEN = 3  # for the subagent's answer limit: errs towards fewer characters
SUBAGENT_NOTE = (
    "[You are a subagent: another agent gave you this job. It sees only your final answer, "
    "at most {limit} characters, and nothing else of this conversation. Your tools: "
    "{tools}. Work until you can answer, then reply with the answer alone: the facts "
    "asked for, with file names and line numbers where they help.]")
STOPPED = {
    "max_turns": "it reached its limit of {turns} model calls without a final answer "
                 "(subagent_max_turns).",
    "output_limit": "its replies were cut by the output limit again and again.",
}


@dataclass
class Session:
    """Everything a front end (one-shot or REPL) needs."""

    settings: Settings
    agent: Agent
    policy: CommandPolicy
    approvals: Approvals = field(default_factory=Approvals)  # fetches, edits
    notices: list[str] = field(default_factory=list)
    resumed: int = 0  # messages restored from a saved session
    redactor: Redactor = field(default_factory=Redactor)  # for everything shown or written
    mcp: McpTools | None = None  # the MCP servers, when any are configured and enabled
    spills: SpillClaim | None = None  # keeps other sessions from pruning our spill files

    def start_servers(self) -> None:
        """Start the MCP servers in the background, if not yet (see build_session)."""
        if self.mcp is not None:
            self.mcp.start()

    def close(self) -> None:
        """Stop what the session started (MCP servers, the hold on its spill folder);
        safe to call twice."""
        if self.mcp is not None:
            self.mcp.close()
        if self.spills is not None:
            self.spills.release()

    @property
    def provider(self) -> Provider:
        """The model server in use now (/model may have switched it)."""
        return self.agent.provider

    def overhead_warning(self) -> str | None:
        """A warning when the fixed overhead (system prompt, instruction files, tool
        schemas) takes more than 25 % of the window. Counting loads the tokenizer, so
        the REPL calls this off the start-up path."""
        usage = self.agent.context.usage()
        fixed = usage.system + usage.tools
        window = self.provider.info.window.budget_tokens
        if fixed <= OVERHEAD_WARNING_SHARE * window:
            return None
        return (
            f"The system prompt, tool schemas and instruction files take {fixed} tokens, "
            f"{percent(fixed, window)} of the {window}-token window, leaving little for work. "
            "Load the model with a larger context, or shorten AGENTS.md/CLAUDE.md."
        )


def _dirs(settings: Settings, names: tuple[str, ...]) -> tuple[Path, ...]:
    out = []
    for name in names:
        path = (settings.project_root / Path(name).expanduser()).resolve()
        if not path.is_dir():
            raise ConfigError(f"add_dir: {name} is not a directory.")
        out.append(path)
    return tuple(out)


def _index() -> SessionIndex:
    return SessionIndex(user_state_dir(os.environ))


def find_transcript(settings: Settings, resume: str | None, latest: bool) -> Path | None:
    """The saved session to resume: `resume` by id, the newest one with `latest`.

    Only sessions this user's Swival recorded for this project (the session index in
    the user's state dir) are candidates: a transcript that came with the repository,
    or that anything else wrote, is never resumed. Checks the state dir first."""
    root = settings.project_root
    prepare_state_dir(root)
    if resume is None and not latest:
        return None
    folder, index = sessions_dir(root), _index()
    saved = index.transcripts(root)
    strangers = index.strangers(root)
    others = (f" {plural(strangers, 'session file')} there {agree(strangers, 'was', 'were')} "
              "not recorded by Swival for you (they may have come with the repository); "
              f"{agree(strangers, 'that one is', 'those are')} never resumed."
              if strangers else "")
    if resume is not None:  # a subagent's transcript only by its whole id
        matches = [sid for sid in index.transcripts(root, subagents=True) if sid == resume] or [
            sid for sid in saved if sid.startswith(resume)]
        if len(matches) == 1:
            return _unchanged(index, root, matches[0])
        if not matches and (folder / f"{resume}.jsonl").exists():
            raise UsageError(
                f"Session {resume!r} in {folder} was not recorded by Swival for you (it may "
                "have come with the repository), so it will not be resumed. Sessions you "
                f"can resume: {', '.join(saved[-5:]) or 'none yet'}.")
    if not saved:
        raise UsageError(f"No session recorded in {folder} yet: start one first (run "
                         f"swival).{others}")
    if resume is None:
        return _unchanged(index, root, saved[-1])
    what = "is ambiguous" if matches else "was not found"
    raise UsageError(f"Session {resume!r} {what} in {folder}. Recent sessions: "
                     f"{', '.join(saved[-5:])}.")


def _unchanged(index: SessionIndex, root: Path, session_id: str) -> Path:
    """The transcript of `session_id`; UsageError when it is not what Swival wrote."""
    path = sessions_dir(root) / f"{session_id}.jsonl"
    change = index.changed(root, session_id)
    if change is not None:
        raise UsageError(f"Session {session_id} ({path}) will not be resumed: {change}. "
                         "Start a new session, or resume another with --resume ID.")
    return path


def open_session(settings: Settings, *, interactive: bool,
                 transcript: Path | None = None) -> Session:
    """Connect to the server, then build the agent. Raises ProviderUnreachable etc."""
    return build_session(settings, connect(settings), interactive=interactive,
                         transcript=transcript, connector=Connector(settings))


def _context_engine(settings: Settings, provider: Provider, registry: ToolRegistry,
                    state_dir: Path, redactor: Redactor, interactive: bool) -> ContextEngine:
    """The context engine, recording its transcript (redacted) in the session index."""
    root, index = settings.project_root, _index()
    return ContextEngine(
        ContextSettings(
            window=provider.info.window.budget_tokens,
            max_output_tokens=settings.max_output_tokens,
            tool_result_share=settings.tool_result_share,
            compaction_trigger=settings.compaction_trigger,
            compaction_target=settings.compaction_target,
            proactive_summaries=settings.proactive_summaries,
            # Providers whose prompt counts may leave out KV-cached tokens say so.
            counts_include_cache=getattr(provider, "counts_include_cache", True),
            confirmed_window=provider.info.window.confirmed_tokens,
            interactive=interactive,
        ),
        system_prompt(root), registry.schemas(),
        storage=Storage(state_dir, redactor=redactor,
                        on_create=lambda path: index.record(root, path.stem),
                        on_seal=lambda path, size, digest: index.seal(
                            root, path.stem, size, digest)),
        # A server that counts prompts itself (llama.cpp) offers count_prompt.
        server=ServerAid(make_summarizer(provider, settings.temperature),
                         getattr(provider, "count_prompt", None)),
    )


def build_session(settings: Settings, provider: Provider, *, interactive: bool,
                  transcript: Path | None = None,
                  connector: Connector | None = None) -> Session:
    """Build tools, context engine and agent around an already connected provider;
    with `transcript`, continue that saved session; with `connector`, /model can reach
    the server's other models. MCP servers start in the background at once, or, when
    `interactive`, when the front end calls `start_servers()` (the REPL does once its
    prompt is drawn; the first request starts them in any case)."""
    root = settings.project_root
    state_dir = prepare_state_dir(root)
    approvals = Approvals()
    fetch_policy = FetchPolicy(settings.fetch, yolo=settings.yolo, approvals=approvals)
    widen = subagent_tools(settings.subagent_tools)  # () widens nothing: children read only
    registry = session_registry(settings, fetch=fetch_policy.enabled)
    mode = resolve_mode(settings.commands, settings.yolo, interactive or sys.stdin.isatty())
    redactor = redactor_for(settings, os.environ)
    sandbox = sandbox_from_settings(settings, os.environ)
    tool_ctx = ToolContext(
        root=root,
        extra_dirs=_dirs(settings, settings.add_dir),
        read_only_dirs=_dirs(settings, settings.add_dir_ro),
        command_timeout=float(settings.command_timeout),
        fetch_policy=fetch_policy,
        sandbox=sandbox,
        redactor=redactor,
    )
    policy = CommandPolicy(mode, workspace=Workspace.of(tool_ctx, os.environ))
    tool_ctx.approve = policy.approve
    edits = "auto" if settings.yolo else settings.edits
    tool_ctx.approve_edit = EditPolicy(edits, approvals).approve
    context = _context_engine(settings, provider, registry, state_dir, redactor, interactive)
    resumed = context.load_transcript(transcript) if transcript is not None else 0
    tool_ctx.session_id = context.session_id  # names the session's spill folder
    spills = _hold_spills(state_dir, context.session_id)
    tool_ctx.undo = UndoJournal(undo_folder(state_dir, context.session_id))
    tool_ctx.undo.prune(spill_folder(state_dir, context.session_id).parent)
    mcp, mcp_notices = _start_mcp(settings, registry, context, approvals, redactor)
    agent = Agent(provider, registry, context, tool_ctx,
                  AgentConfig(max_turns=settings.max_turns, temperature=settings.temperature,
                              redactor=redactor, tool_source=mcp, connector=connector))
    tool_ctx.spawn = Subagents(settings, agent, widen).spawn
    session = Session(settings, agent, policy, approvals, resumed=resumed,
                      redactor=redactor, mcp=mcp, spills=spills)
    session.notices.extend(_notices(settings, mode, fetch_policy.mode, sandbox))
    session.notices.extend(mcp_notices)
    if not interactive:
        session.start_servers()  # the REPL starts them once its prompt is up
    return session


def _hold_spills(state_dir: Path, session_id: str) -> SpillClaim | None:
    """Hold this session's spill folder while it runs, so another session's pruning
    leaves the files its history points to alone (None if the folder cannot be held:
    the session runs on, unprotected)."""
    try:
        return claim_spills(spill_folder(state_dir, session_id))
    except OSError:
        return None


class Subagents:
    """Runs the task tool's children for one session (`spawn`, handed to the tool through
    its ToolContext). A child gets a fresh context engine on the parent's model and
    window, the parent's tools that `widen` allows besides the read-only ones (never
    task), the parent's approvals, policies and sandbox, and its own turn limit. Its
    transcript is recorded in the session index under the parent's id, so it is never
    taken for a stranger nor offered as the session to continue."""

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
        return ChildRun(reason, answer=finished.answer, error=why, limit=limit,
                        transcript=shown, turns=finished.turns,
                        tool_calls=finished.tool_calls, usage=finished.usage)

    def _count(self, finished: TurnFinished) -> None:
        self.parent.tool_ctx.subagents.add(finished.usage, finished.reason == "done")

    def _child(self, limit: int) -> tuple[Agent, int]:
        """A child agent, and the answer limit it was told (the task tool's, at most
        the window-scaled share of one tool result)."""
        parent, settings = self.parent, self.settings
        tools = [tool for name in parent.tools.names
                 if (tool := self._child_tool(name)) is not None]
        given = [tool.spec.name for tool in tools]
        registry = ToolRegistry(tools, withheld={
            name: withheld(name, given, self.widen == ())
            for name in parent.tools.names if name not in given})
        context = self._context(registry)
        share = context.settings.tool_result_share * context.budget.input_budget
        limit = min(limit, int(share * CHARS_PER_TOKEN))
        if context.storage.state_dir is not None:
            self.held.append(_hold_spills(context.storage.state_dir, context.session_id))
        tool_ctx = replace(parent.tool_ctx, read_files={}, session_id=context.session_id,
                           spawn=None, on_event=lambda _event: None,
                           subagents=SubagentTotals())
        child = Agent(parent.provider, registry, context, tool_ctx, AgentConfig(
            max_turns=settings.subagent_max_turns, temperature=settings.temperature,
            redactor=parent.config.redactor, subagent=True))
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
        root, index, folder = self.settings.project_root, _index(), parent.storage.state_dir
        number = self.parent.tool_ctx.subagents.tasks
        session_id = f"{parent.session_id}-task{number}"
        while folder and (folder / "sessions" / f"{session_id}.jsonl").exists():
            number += 1
            session_id = f"{parent.session_id}-task{number}"
        provider, owner = self.parent.provider, parent.session_id
        storage = Storage(folder, session_id, self.parent.config.redactor, keep_todos=False,
                          on_create=lambda path: index.record(root, path.stem, owner),
                          on_seal=lambda path, size, digest: index.seal(
                              root, path.stem, size, digest)) if folder else Memory(session_id)
        return ContextEngine(
            replace(parent.settings, proactive_summaries=False), system_prompt(root),
            registry.schemas(), storage=storage,
            server=ServerAid(make_summarizer(provider, self.settings.temperature),
                             getattr(provider, "count_prompt", None)))


def _start_mcp(settings: Settings, registry: ToolRegistry, context: ContextEngine,
               approvals: Approvals, redactor: Redactor) -> tuple[McpTools | None, list[str]]:
    """The enabled MCP servers, not started yet (their tools join before the first
    request). The MCP modules are imported only when a server is configured."""
    if not settings.mcp_servers or not settings.mcp:
        return None, []
    from swival.mcp.hub import Hub
    from swival.mcp.manager import McpTools
    from swival.mcp.spec import specs_from
    from swival.mcp.tools import Access

    specs, notices = specs_from(settings)
    if not specs:
        return None, notices
    hub = Hub(specs)
    access = Access(hub, approvals, yolo=settings.yolo, redactor=redactor)
    return McpTools(registry, context, access), notices


def _notices(settings: Settings, mode: str, fetch_mode: str, sandbox: Sandbox) -> list[str]:
    """What to tell the person at start-up about keys, and how commands and fetches run."""
    notices = []
    key_warning = literal_key_warning(settings)
    if key_warning:
        notices.append(key_warning)
    sandbox_notice = sandbox.startup_notice()
    # Without commands the missing sandbox changes nothing, unless the person asked for it.
    if sandbox_notice and (mode != "none" or settings.sandbox == "on"):
        notices.append(sandbox_notice)
    if settings.read_only:
        notices.append("Plan mode (--read-only): the model only gets tools that change "
                       "nothing.")
    if settings.yolo or mode == "all":
        notices.append("Commands: every command is allowed without asking "
                       + ("(--yolo)." if settings.yolo else "(--commands all)."))
    if settings.yolo or fetch_mode == "all":
        notices.append("Fetch: every public host may be fetched without asking "
                       + ("(--yolo)." if settings.yolo else "(--fetch all)."))
    return notices
