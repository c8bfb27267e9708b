"""The deterministic ledger: facts the harness records itself, so that no model
summary, however weak, can lose them. It is rendered into the pinned block that
every compaction level keeps.

It holds the user's requests verbatim (the first one longer, later ones shorter,
the most recent few), files created/modified/deleted, commands with exit codes and
the last error lines. Every list is bounded so the block stays a few hundred tokens.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Mapping
from typing import Any

from swival.messages import ToolCall, ToolResult

FIRST_REQUEST_CHARS = 1200
REQUEST_CHARS = 400
MAX_REQUESTS = 5
MAX_FILES = 30
MAX_COMMANDS = 8
MAX_ERRORS = 5
COMMAND_CHARS = 120
ERROR_CHARS = 240

# Specific error lines win over generic ones; each group is searched from the end.
_SPECIFIC = re.compile(
    r"^\s*(?:[\w.]+(?:Error|Exception|Exit|Interrupt)\b.*|FAILED\s+\S+.*|E\s{3}.*\w.*"
    r"|.*\b(?:command not found|No such file or directory|SyntaxError|error:)\b.*)$",
    re.MULTILINE,
)
_GENERIC = re.compile(
    r"^\s*(?:=+ .*\b(?:failed|error)\b.*=+|Traceback \(most recent call last\):"
    r"|.*\btimed out\b.*|FAILED.*)$",
    re.MULTILINE | re.IGNORECASE,
)


def error_line(text: str) -> str | None:
    """The most telling error line of a tool's output, or None."""
    for pattern in (_SPECIFIC, _GENERIC):
        found = pattern.findall(text)
        if found:
            return str(found[-1]).strip()[:ERROR_CHARS]
    return None


def _bounded(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} chars]"


class Ledger:
    """Records requests, file changes, commands and errors as they happen."""

    def __init__(self) -> None:
        self.first_request: str | None = None
        self.requests: deque[str] = deque(maxlen=MAX_REQUESTS)
        self.files: OrderedDict[str, str] = OrderedDict()
        self.commands: deque[tuple[str, int | None]] = deque(maxlen=MAX_COMMANDS)
        self.errors: deque[str] = deque(maxlen=MAX_ERRORS)

    def record_user(self, text: str) -> None:
        if self.first_request is None:
            self.first_request = _bounded(text, FIRST_REQUEST_CHARS)
        else:
            self.requests.append(_bounded(text, REQUEST_CHARS))

    def record_result(self, call: ToolCall, result: ToolResult) -> None:
        """Fold in one tool result: `meta["changed"]`, `["exit_code"]`, errors."""
        meta: Mapping[str, Any] = result.meta
        for entry in meta.get("changed") or ():
            path, status = str(entry[0]), str(entry[1])
            if self.files.get(path) == "created" and status == "modified":
                status = "created"  # still new as far as the task is concerned
            self.files.pop(path, None)
            self.files[path] = status
            while len(self.files) > MAX_FILES:
                self.files.popitem(last=False)
        exit_code = meta.get("exit_code")
        command = call.arguments.get("command")
        if meta.get("kind") == "command" or exit_code is not None:
            shown = str(command) if command else call.name
            self.commands.append((_bounded(" ".join(shown.split()), COMMAND_CHARS), exit_code))
        failed = result.is_error or (isinstance(exit_code, int) and exit_code != 0)
        if failed or meta.get("kind") == "command":
            line = error_line(result.content)
            if line is None and failed:
                line = result.content.strip().splitlines()[0] if result.content.strip() else None
            if line:
                entry_text = f"{call.name}: {line[:ERROR_CHARS]}"
                if entry_text in self.errors:
                    self.errors.remove(entry_text)
                self.errors.append(entry_text)

    def render(self) -> str:
        """The ledger as markdown; empty string when nothing was recorded."""
        parts: list[str] = []
        if self.first_request is not None:
            parts.append("User's first request (verbatim):\n" + self.first_request)
        if self.requests:
            later = "\n".join(f"- {r}" for r in self.requests)
            parts.append("Later user requests (most recent last):\n" + later)
        if self.files:
            files = "\n".join(f"- {p} ({s})" for p, s in self.files.items())
            parts.append("Files changed so far:\n" + files)
        if self.commands:
            cmds = "\n".join(
                f"- `{c}` exit {'?' if code is None else code}" for c, code in self.commands
            )
            parts.append("Recent commands:\n" + cmds)
        if self.errors:
            parts.append("Last errors seen:\n" + "\n".join(f"- {e}" for e in self.errors))
        if not parts:
            return ""
        return "## Ledger (recorded by the harness)\n" + "\n\n".join(parts)
