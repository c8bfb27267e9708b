"""snapshot: let the model collapse its own investigation into a summary.

save marks where a block of work starts; restore replaces everything since that point
(or since the last user message) with the model's summary; cancel drops the mark;
status reports it. The tool checks the arguments and returns a SnapshotEffect: only
the context layer rewrites history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swival.effects import SnapshotEffect
from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.think import optional_text
from swival.words import plural

ACTIONS = ("save", "restore", "cancel", "status")
MIN_SUMMARY_CHARS = 20


class Snapshot:
    """`restore` needs a `summary`; `force` acknowledges writes or commands in the scope."""

    read_only = True
    spec = ToolSpec(
        name="snapshot",
        description=(
            "After reading/searching, restore with a summary of findings to free context; "
            "it replaces work since save or the request."
        ),
        parameters={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(ACTIONS)},
                "label": {"type": "string"},
                "summary": {"type": "string"},
                "force": {"type": "boolean"},
            },
            "required": ["action"],
        },
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        action = args.get("action")
        if action not in ACTIONS:
            raise ToolError(f"`action` must be one of {', '.join(ACTIONS)}.")
        summary = optional_text(args, "summary")
        if action == "restore":
            if summary is None:
                raise ToolError(
                    "snapshot restore needs `summary`: write what you learned (files, line "
                    "numbers, facts, what to do next); it replaces the collapsed messages.",
                    summary="restore refused: no summary of the findings given",
                )
            if len(summary) < MIN_SUMMARY_CHARS:
                raise ToolError(
                    f"the summary is only {len(summary)} characters; everything it replaces "
                    "will be gone, so write the findings out (files, facts, next steps).",
                    summary=f"restore refused: a summary of {plural(len(summary), 'character')}"
                    " is too short",
                )
        force = args.get("force")
        if force is not None and not isinstance(force, bool):
            raise ToolError("`force` must be true or false.")
        effect = SnapshotEffect(
            action=action, label=optional_text(args, "label"), summary=summary,
            force=bool(force),
        )
        return ToolResult("", effect=effect)
