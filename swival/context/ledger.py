"""The deterministic ledger: facts the harness records itself, so that no model
summary, however weak, can lose them. It is rendered into the pinned block that
every compaction level keeps.

It holds the user's requests verbatim (the first one longer, later ones shorter,
the most recent few, each once), files created/modified/deleted, commands with exit
codes and the errors seen: those of calls that failed (a tool error, a non-zero exit),
never lines of a successful command's output that merely read like errors (a source
file that handles `KeyError`). Every list is bounded so the block stays a few hundred
tokens. Requests still in the history the model sees are not repeated: compaction
drops user messages only at level 3, and the block is re-rendered on every rewrite.

Errors are kept per command (or per tool and path): a rerun replaces that command's
entry with its newest outcome and moves it to the end, an identical error line under
another command is dropped, and a clean rerun with exit 0 marks the entry as passed.
Each entry holds the cause and the outcome line (errorlines.py). The section is
bounded in characters, scaled to the window (`Ledger.for_budget`), evicting the oldest
entries first: small windows keep the few newest errors, large ones a longer history.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import Any

from swival.context.errorlines import error_line, error_lines
from swival.messages import ToolCall, ToolResult

__all__ = ["Ledger", "error_line"]

FIRST_REQUEST_CHARS = 1200
REQUEST_CHARS = 400
MAX_REQUESTS = 5
MAX_FILES = 30
MAX_COMMANDS = 8
COMMAND_CHARS = 120
ERROR_KEY_CHARS = 60  # the command shown before its error lines
# Characters for the errors section: a share of the input budget (tokens at about
# 3.5 characters each), within fixed bounds.
ERROR_SHARE = 0.05
ERROR_CHARS_MIN = 700
ERROR_CHARS_MAX = 3000
ERROR_CHARS_DEFAULT = 1200
PASSED_NOTE = " (a later run exited 0)"
VISIBLE_HEAD = 300  # a request whose head is still in the history is not repeated


def _bounded(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} chars]"


class Ledger:
    """Records requests, file changes, commands and errors as they happen.
    `error_chars` bounds the errors section (see the module docstring)."""

    def __init__(self, error_chars: int = ERROR_CHARS_DEFAULT) -> None:
        self.first_request: str | None = None
        self.requests: deque[str] = deque(maxlen=MAX_REQUESTS)
        self.files: OrderedDict[str, str] = OrderedDict()
        self.commands: deque[tuple[str, int | None]] = deque(maxlen=MAX_COMMANDS)
        self.errors: OrderedDict[str, str] = OrderedDict()  # key -> lines, oldest first
        self.error_chars = error_chars
        self.latest = (0, 0)  # characters of the newest request kept here, of all

    @classmethod
    def for_budget(cls, input_budget: int) -> Ledger:
        """A ledger whose errors section is sized for an input budget of this many tokens."""
        chars = int(input_budget * ERROR_SHARE * 3.5)
        return cls(min(ERROR_CHARS_MAX, max(ERROR_CHARS_MIN, chars)))

    def record_user(self, text: str) -> None:
        limit = REQUEST_CHARS if self.first_request is not None else FIRST_REQUEST_CHARS
        total = len(text.strip())
        self.latest = (min(total, limit), total)
        if self.first_request is None:
            self.first_request = _bounded(text, FIRST_REQUEST_CHARS)
        else:
            request = _bounded(text, REQUEST_CHARS)
            if request in self.requests:  # a repeated request ("continue") counts once
                self.requests.remove(request)
            self.requests.append(request)

    def record_result(self, call: ToolCall, result: ToolResult) -> None:
        """Fold in one tool result: `meta["changed"]`, `["exit_code"]`, errors."""
        meta: Mapping[str, Any] = result.meta
        for entry in meta.get("changed") or ():
            self._record_file(str(entry[0]), str(entry[1]))
        exit_code = meta.get("exit_code")
        command = meta.get("command")  # a command tool says what it ran
        shown = " ".join(str(command).split()) if command else call.name
        is_command = meta.get("kind") == "command" or exit_code is not None
        if is_command:
            self.commands.append((_bounded(shown, COMMAND_CHARS), exit_code))
        if is_command or result.is_error or exit_code not in (None, 0):
            key = shown if command else f"{call.name} {meta.get('path') or ''}".strip()
            self._record_error(_head(key, ERROR_KEY_CHARS), result, is_command)

    def _record_file(self, path: str, status: str) -> None:
        if self.files.get(path) == "created" and status == "modified":
            status = "created"  # still new as far as the task is concerned
        self.files.pop(path, None)
        self.files[path] = status
        while len(self.files) > MAX_FILES:
            self.files.popitem(last=False)

    def _record_error(self, key: str, result: ToolResult, is_command: bool) -> None:
        """Keep the newest error lines of `key` when the call failed (a tool error, a
        non-zero exit): a successful command's output is not an error, however much it
        reads like one (`cat` of a file that handles KeyError). A clean pass marks the
        key's old entry."""
        exit_code = result.meta.get("exit_code")
        if not (result.is_error or (isinstance(exit_code, int) and exit_code != 0)):
            if exit_code == 0 and key in self.errors and not self.errors[key].endswith(
                    PASSED_NOTE):
                self.errors[key] += PASSED_NOTE
            return
        lines = error_lines(result.content) or _fallback_line(result.content, is_command)
        if not lines:
            return
        text = " | ".join(lines)
        for other in [k for k, v in self.errors.items() if v == text]:
            del self.errors[other]
        self.errors.pop(key, None)
        self.errors[key] = text
        while len(self.errors) > 1 and self._error_size() > self.error_chars:
            self.errors.popitem(last=False)

    def _error_size(self) -> int:
        return sum(len(k) + len(v) + 8 for k, v in self.errors.items())

    def render(self, shown: Callable[[str], bool] = lambda request: False) -> str:
        """The ledger as markdown; empty string when nothing was recorded. Requests
        for which `shown` is true (still in the conversation) are not repeated."""
        parts: list[str] = []
        if self.first_request is not None:
            first = ("(still in the conversation)" if shown(self.first_request[:VISIBLE_HEAD])
                     else self.first_request)
            parts.append("User's first request (verbatim):\n" + first)
        later = [r for r in self.requests if not shown(r[:VISIBLE_HEAD])]
        if later:
            lines = "\n".join(f"- {r}" for r in later)
            parts.append("Later user requests not shown below (most recent last):\n" + lines)
        if self.files:
            files = "\n".join(f"- {p} ({s})" for p, s in self.files.items())
            parts.append("Files changed so far:\n" + files)
        if self.commands:
            cmds = "\n".join(
                f"- `{c}` exit {'?' if code is None else code}" for c, code in self.commands
            )
            parts.append("Recent commands:\n" + cmds)
        if self.errors:
            errors = "\n".join(f"- `{k}`: {v}" for k, v in self.errors.items())
            parts.append("Errors seen (newest outcome per command, most recent last):\n"
                         + errors)
        if not parts:
            return ""
        return "## Ledger (recorded by the harness)\n" + "\n\n".join(parts)


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fallback_line(content: str, command: bool) -> list[str]:
    """A failure without a recognisable error line: the last non-empty line of a
    command's output (where runs end with their verdict), else the first line."""
    lines = [ln.strip() for ln in content.splitlines() if ln.strip()]
    if not lines:
        return []
    return [_head(lines[-1] if command else lines[0], 200)]
