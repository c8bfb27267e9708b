"""Every tool offered to the model, in the order their schemas are sent."""

from __future__ import annotations

from swival.tools.base import Tool
from swival.tools.core import core_tools
from swival.tools.knowledge_tools import knowledge_tools


def default_tools() -> list[Tool]:
    return [*core_tools(), *knowledge_tools()]
