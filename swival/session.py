"""The composition root: builds a provider, tools, context engine and agent from settings.

Layer 7 with cli.py: the only place that knows every component.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.config import (
    Settings,
    known_secrets,
    literal_key_warning,
)
from swival.context.engine import ContextEngine, ContextSettings
from swival.context.knowledge import Knowledge
from swival.errors import ConfigError
from swival.prompts import system_prompt
from swival.providers.base import Provider
from swival.providers.factory import connect
from swival.tools.base import ToolContext
from swival.tools.catalog import default_tools
from swival.tools.policy import CommandPolicy, resolve_mode
from swival.tools.registry import ToolRegistry

OVERHEAD_WARNING_SHARE = 0.25


@dataclass
class Session:
    """Everything a front end (one-shot or REPL) needs."""

    settings: Settings
    provider: Provider
    agent: Agent
    policy: CommandPolicy
    notices: list[str] = field(default_factory=list)


def _dirs(settings: Settings, names: tuple[str, ...]) -> tuple[Path, ...]:
    out = []
    for name in names:
        path = (settings.project_root / Path(name).expanduser()).resolve()
        if not path.is_dir():
            raise ConfigError(f"add_dir: {name} is not a directory.")
        out.append(path)
    return tuple(out)


def open_session(settings: Settings, *, interactive: bool) -> Session:
    """Connect to the server, then build the agent. Raises ProviderUnreachable etc."""
    provider = connect(settings)
    root = settings.project_root
    registry = ToolRegistry(default_tools())
    mode = resolve_mode(settings.commands, settings.yolo, interactive or sys.stdin.isatty())
    policy = CommandPolicy(mode)
    tool_ctx = ToolContext(
        root=root,
        extra_dirs=_dirs(settings, settings.add_dir),
        read_only_dirs=_dirs(settings, settings.add_dir_ro),
        command_timeout=float(settings.command_timeout),
        approve=policy.approve,
    )
    window = provider.info.window
    ctx_settings = ContextSettings(
        window=window.budget_tokens,
        max_output_tokens=settings.max_output_tokens,
        tool_result_share=settings.tool_result_share,
        compaction_trigger=settings.compaction_trigger,
        compaction_target=settings.compaction_target,
        proactive_summaries=settings.proactive_summaries,
    )
    state_dir = root / ".swival"
    knowledge = Knowledge(state_dir)
    context = ContextEngine(
        ctx_settings, system_prompt(root), registry.schemas(),
        knowledge=knowledge, state_dir=state_dir,
        summarize=make_summarizer(provider, settings.temperature),
    )
    agent = Agent(provider, registry, context, tool_ctx,
                  AgentConfig(max_turns=settings.max_turns, temperature=settings.temperature,
                              secrets=known_secrets(settings, os.environ)))
    session = Session(settings, provider, agent, policy)
    session.notices.extend(_startup_notices(session))
    return session


def _startup_notices(session: Session) -> list[str]:
    notes = []
    key_warning = literal_key_warning(session.settings)
    if key_warning:
        notes.append(key_warning)
    if session.settings.yolo:
        notes.append("--yolo: every command and write is allowed without asking.")
    breakdown = session.agent.context.usage_breakdown()
    fixed = breakdown.get("system", 0) + breakdown.get("tools", 0)
    window = session.provider.info.window.budget_tokens
    if fixed > OVERHEAD_WARNING_SHARE * window:
        notes.append(
            f"The system prompt, tool schemas and instruction files take {fixed} tokens, "
            f"{100 * fixed // window}% of the {window}-token window. Load the model with a larger "
            "context, or shorten AGENTS.md/CLAUDE.md."
        )
    return notes
