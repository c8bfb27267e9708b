"""The composition root: builds a provider, tools, context engine and agent from settings.

Layer 5, shared by the one-shot runner and the REPL (layer 6): the only package that
knows every component. The task tool's children are built in subagents.py; what a
session keeps on disk (the saved session to resume, the hold on spill files) in disk.py.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.config import Settings, literal_key_warning, redactor_for
from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.errors import ConfigError
from swival.prompts import system_prompt
from swival.providers.base import Provider
from swival.providers.factory import Connector, connect
from swival.redaction import Redactor
from swival.session.disk import find_transcript, hold_spills, session_index
from swival.session.subagents import Subagents
from swival.state import SpillClaim, prepare_state_dir, spill_folder, undo_folder
from swival.tools.approval import Approvals, EditPolicy
from swival.tools.base import ToolContext
from swival.tools.catalog import session_registry, subagent_tools
from swival.tools.fetch_policy import FetchPolicy
from swival.tools.policy import CommandPolicy, Workspace, resolve_mode
from swival.tools.registry import ToolRegistry
from swival.tools.sandbox import Sandbox, sandbox_from_settings
from swival.tools.undo import UndoJournal
from swival.words import percent

if TYPE_CHECKING:
    from swival.mcp.manager import McpTools

__all__ = ["Session", "build_session", "find_transcript", "open_session"]

OVERHEAD_WARNING_SHARE = 0.25


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


def open_session(settings: Settings, *, interactive: bool,
                 transcript: Path | None = None) -> Session:
    """Connect to the server, then build the agent. Raises ProviderUnreachable etc."""
    return build_session(settings, connect(settings), interactive=interactive,
                         transcript=transcript, connector=Connector(settings))


def _context_engine(settings: Settings, provider: Provider, registry: ToolRegistry,
                    state_dir: Path, redactor: Redactor, interactive: bool) -> ContextEngine:
    """The context engine, recording its transcript (redacted) in the session index."""
    root, index = settings.project_root, session_index()
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
    # A one-shot run asks only where a person can both see the question and answer it.
    can_ask = interactive or (sys.stdin.isatty() and sys.stderr.isatty())
    mode = resolve_mode(settings.commands, settings.yolo, can_ask)
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
    policy = CommandPolicy(mode, workspace=Workspace.of(tool_ctx, os.environ),
                           unattended=mode != resolve_mode(settings.commands, settings.yolo,
                                                           True))
    tool_ctx.approve = policy.approve
    edits = "auto" if settings.yolo else settings.edits
    tool_ctx.approve_edit = EditPolicy(edits, approvals).approve
    context = _context_engine(settings, provider, registry, state_dir, redactor, interactive)
    resumed = context.load_transcript(transcript) if transcript is not None else 0
    tool_ctx.session_id = context.session_id  # names the session's spill folder
    spills = hold_spills(state_dir, context.session_id)
    tool_ctx.undo = UndoJournal(undo_folder(state_dir, context.session_id))
    tool_ctx.undo.prune(spill_folder(state_dir, context.session_id).parent)
    mcp, mcp_notices = _start_mcp(settings, registry, context, approvals, redactor,
                                  interactive)
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


def _start_mcp(settings: Settings, registry: ToolRegistry, context: ContextEngine,
               approvals: Approvals, redactor: Redactor,
               interactive: bool) -> tuple[McpTools | None, list[str]]:
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
    access = Access(hub, approvals, yolo=settings.yolo, redactor=redactor,
                    interactive=interactive)
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
