"""think: a numbered reasoning step kept outside the conversation.

The tool only checks its arguments and returns a ThinkEffect; the context layer keeps
the steps (numbering, revisions, branches) and renders a bounded digest of them into
the pinned block, so the reasoning survives every compaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swival.effects import ThinkEffect
from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec

MAX_THOUGHT_CHARS = 4000


def positive(args: Mapping[str, Any], name: str) -> int | None:
    """The integer argument `name` if given; a ToolError when it is not >= 1."""
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError(f"`{name}` must be a whole number >= 1 (got {value!r}).")
    return value


def optional_text(args: Mapping[str, Any], name: str) -> str | None:
    """The stripped string argument `name`, or None when absent or blank."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string.")
    return value.strip() or None


class Think:
    """Record one reasoning step; `revises=N` replaces step N, `branch` names an
    alternative line of thought."""

    read_only = True
    spec = ToolSpec(
        name="think",
        description="Note a reasoning step; it survives compaction.",
        parameters={
            "type": "object",
            "properties": {
                "thought": {"type": "string"},
                "thought_number": {"type": "integer"},
                "revises": {"type": "integer"},
                "branch": {"type": "string"},
            },
            "required": ["thought"],
        },
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        thought = optional_text(args, "thought")
        if thought is None:
            raise ToolError("`thought` is empty; write the reasoning step.")
        if len(thought) > MAX_THOUGHT_CHARS:
            raise ToolError(
                f"`thought` is {len(thought)} characters; keep a step under "
                f"{MAX_THOUGHT_CHARS} (split it into several steps)."
            )
        effect = ThinkEffect(
            thought=thought,
            thought_number=positive(args, "thought_number"),
            revises=positive(args, "revises"),
            branch=optional_text(args, "branch"),
        )
        return ToolResult("", effect=effect)
