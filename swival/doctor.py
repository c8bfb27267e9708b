"""`swival --doctor`: what Swival will use and whether the window can hold its own prompt."""

from __future__ import annotations

import os
from typing import Any

from swival.config import Settings, redactor_for
from swival.context.budget import Budget
from swival.context.tokens import TokenCounter
from swival.errors import SwivalError
from swival.messages import Message
from swival.prompts import instruction_files, load
from swival.providers.base import UNKNOWN_WINDOW_BUDGET, ProviderInfo
from swival.providers.factory import connect
from swival.tools.catalog import session_registry
from swival.tools.fetch_policy import FetchPolicy
from swival.tools.sandbox import sandbox_from_settings
from swival.tools.shell_parse import parser_problem
from swival.words import percent

OVERHEAD_WARNING_SHARE = 0.25


def session_schemas(settings: Settings) -> list[dict[str, Any]]:
    """The schemas of exactly the tools a session with `settings` sends."""
    fetch = FetchPolicy(settings.fetch, yolo=settings.yolo).enabled
    return session_registry(settings, fetch=fetch).schemas()


def overhead(settings: Settings) -> dict[str, int]:
    """Tokens paid on every request before any work: prompt, schemas, instruction files."""
    counter = TokenCounter()  # as the session counts them (its system message)
    parts = {
        "system prompt": counter.message(Message("system", load("system").strip())),
        "tool schemas": counter.schemas(session_schemas(settings)),
    }
    for name, text in instruction_files(settings.project_root):
        parts[name] = counter.text(f"\n\nProject instructions from {name}:\n{text}")
    return parts


def sandbox_lines(settings: Settings) -> list[str]:
    """Whether commands are sandboxed, and what to do when bwrap was wanted but fails."""
    sandbox = sandbox_from_settings(settings, os.environ)
    lines = [f"sandbox          {sandbox.describe()}"]
    notice = sandbox.startup_notice()
    if notice:
        lines.append(f"  {notice}")
    return lines


def parser_lines() -> list[str]:
    """Whether commands can be checked: without the bash parser none is auto-approved."""
    problem = parser_problem()
    if problem is None:
        return ["command check    bash parser loaded"]
    return [f"command check    off: the bash parser could not be loaded ({problem})",
            "  Every command will be asked about (refused where no one can answer), even "
            "with --commands git,ls,...; to fix it, install Swival again the way it was "
            "installed (pip, pipx or uv), which brings back tree-sitter and tree-sitter-bash."]


def mcp_lines(settings: Settings, window: int | None) -> list[str]:
    """Each enabled MCP server checked (see swival/mcp/check.py); nothing imports the MCP
    SDK when no server is configured."""
    if not settings.mcp_servers:
        return ["mcp servers      none configured"]
    if not settings.mcp:
        return ["mcp servers      off (--no-mcp or mcp = false)"]
    from swival.mcp.check import doctor_lines
    from swival.mcp.spec import specs_from

    specs, notices = specs_from(settings)
    off = len(settings.mcp_servers) - len(specs)
    lines = [f"mcp servers      {len(specs)} enabled" + (f", {off} off" if off else "")]
    lines += [f"  {notice}" for notice in notices]
    if specs:
        counter = TokenCounter()
        budget = Budget(window or UNKNOWN_WINDOW_BUDGET, settings.max_output_tokens, 1, 1)
        lines += doctor_lines(specs, counter.schemas, counter.schemas(
            session_schemas(settings)), budget.input_budget)
    return lines


def report(settings: Settings, info: ProviderInfo | None, error: str | None) -> list[str]:
    """The doctor's lines, plain text (rendered by the caller)."""
    lines = [f"project root     {settings.project_root}"]
    files = ", ".join(str(p) for p in settings.config_files) or "none (defaults)"
    lines.append(f"config files     {files}")
    lines.append(f"provider         {settings.provider}")
    lines.extend(sandbox_lines(settings))
    lines.extend(parser_lines())
    if info is None:
        lines.append(f"server           unreachable: {error}")
        window = None
    else:
        lines.append(f"server           {info.base_url}")
        lines.append(f"model            {info.model} ({info.model_source})")
        lines.append(f"window           {info.window.describe()}")
        window = info.window.budget_tokens
    parts = overhead(settings)
    total = sum(parts.values())
    for name, tokens in parts.items():
        lines.append(f"  {name:<15}{tokens:>6} tokens")
    share = f", {percent(total, window, 1)} of the window" if window else ""
    lines.append(f"fixed overhead   {total} tokens{share}")
    if window and total > OVERHEAD_WARNING_SHARE * window:
        lines.append(
            "warning: fixed overhead is over 25% of the window; load the model with a larger "
            "context or shorten AGENTS.md/CLAUDE.md."
        )
    lines.extend(mcp_lines(settings, window))
    return lines


def run_doctor(settings: Settings) -> int:
    """Print the report; exit 3 when the server cannot be reached, else 0."""
    try:
        info: ProviderInfo | None = connect(settings).info
        error = None
    except SwivalError as exc:
        info, error = None, str(exc)
    # Redacted like every other output: a key can sit in the base URL's query string.
    print(redactor_for(settings, os.environ).redact("\n".join(report(settings, info, error))))
    return 0 if info is not None else 3
