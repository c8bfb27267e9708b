"""todo: the model's task list, kept outside the conversation and in .swival/todo.md.

The tool checks that each action has what it needs and returns a TodoEffect; the
context layer owns the list, the file and the reminders.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swival.effects import TodoEffect
from swival.messages import ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.think import optional_text, positive

ACTIONS = ("add", "done", "remove", "list", "clear")
MAX_ITEM_CHARS = 300


class Todo:
    """add (needs `text`), done and remove (need `id`), list, clear (removes all)."""

    read_only = True
    spec = ToolSpec(
        name="todo",
        description="Persistent task list: add text, done/remove id.",
        parameters={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(ACTIONS)},
                "text": {"type": "string"},
                "id": {"type": "integer"},
            },
            "required": ["action"],
        },
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        action = args.get("action")
        if action not in ACTIONS:
            raise ToolError(f"`action` must be one of {', '.join(ACTIONS)}.")
        text = optional_text(args, "text")
        item_id = positive(args, "id")
        if action == "add":
            if text is None:
                raise ToolError("todo add needs `text`: the task to remember.")
            if len(text) > MAX_ITEM_CHARS:
                raise ToolError(f"todo text is {len(text)} characters; keep an item under "
                                f"{MAX_ITEM_CHARS}.")
        if action in ("done", "remove") and item_id is None:
            raise ToolError(f"todo {action} needs `id`: the item number shown by todo list.")
        return ToolResult("", effect=TodoEffect(action=action, text=text, id=item_id))
