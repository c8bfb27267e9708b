"""The three tools whose state lives in the context layer: think, todo, snapshot."""

from __future__ import annotations

from swival.tools.base import Tool
from swival.tools.snapshot import Snapshot
from swival.tools.think import Think
from swival.tools.todo import Todo


def knowledge_tools() -> list[Tool]:
    """Fresh instances, in the order their schemas are sent to the model."""
    return [Think(), Todo(), Snapshot()]
