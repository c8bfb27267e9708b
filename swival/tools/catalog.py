"""Every tool offered to the model, in the order their schemas are sent, and the set a
session offers (the doctor counts the same one)."""

from __future__ import annotations

from swival.config import Settings
from swival.errors import ConfigError
from swival.tools.base import Tool
from swival.tools.core import core_tools
from swival.tools.fetch_url import FetchUrl
from swival.tools.knowledge_tools import knowledge_tools
from swival.tools.registry import ToolRegistry
from swival.tools.task import Task


def default_tools(*, fetch: bool = True, task: Task | None = None) -> list[Tool]:
    """Fresh tools; without `fetch` (fetching disabled) fetch_url's schema is not sent.
    `task` (the subagent tool, which needs a session to spawn children) comes last."""
    return [*core_tools(), *([FetchUrl()] if fetch else []), *knowledge_tools(),
            *([task] if task is not None else [])]


def session_registry(settings: Settings, *, fetch: bool) -> ToolRegistry:
    """The tools a session with `settings` gives the model, `task` included (`fetch`:
    whether its fetch policy can ever allow a fetch). ConfigError for a bad
    `subagent_tools`."""
    widen = subagent_tools(settings.subagent_tools)
    return ToolRegistry(default_tools(fetch=fetch, task=Task(read_only=widen == ())),
                        read_only=settings.read_only)


def subagent_tools(value: str) -> tuple[str, ...] | None:
    """What `subagent_tools` adds to a subagent's read-only tools: () nothing, None all
    of the parent's, else those names (built-in tools, or MCP tools by their exposed
    name). ConfigError for a name that is neither."""
    wanted = [name.strip() for name in value.split(",") if name.strip()]
    if wanted in ([], ["read-only"]):
        return ()
    if wanted == ["all"]:
        return None
    tools = default_tools()
    known = [tool.spec.name for tool in tools]
    unknown = [n for n in wanted if n not in known and not n.startswith(("mcp__", "mcp_"))]
    if unknown:
        raise ConfigError(f"subagent_tools: no tool named {', '.join(unknown)}. Use "
                          f"read-only, all, or tools from: {', '.join(known)}.")
    read_only = {tool.spec.name for tool in tools if tool.read_only}
    return tuple(n for n in wanted if n not in read_only)  # those are there anyway
