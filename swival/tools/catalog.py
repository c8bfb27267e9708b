"""Every tool offered to the model, in the order their schemas are sent."""

from __future__ import annotations

from swival.tools.base import Tool
from swival.tools.core import core_tools
from swival.tools.fetch_url import FetchUrl
from swival.tools.knowledge_tools import knowledge_tools
from swival.tools.task import Task


def default_tools(*, fetch: bool = True, task: Task | None = None) -> list[Tool]:
    """Fresh tools; without `fetch` (fetching disabled) fetch_url's schema is not sent.
    `task` (the subagent tool, which needs a session to spawn children) comes last."""
    return [*core_tools(), *([FetchUrl()] if fetch else []), *knowledge_tools(),
            *([task] if task is not None else [])]
