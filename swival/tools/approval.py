"""Asking the person before an action outside the command policy: a fetch today, an MCP
tool call later. One `Approvals` per session; the front end plugs in how to ask.

The question is `confirm(action, scope)`: `action` says what will happen ("Fetch
https://docs.python.org/3/"), `scope` what an "always" answer covers ("docs.python.org").
The answer is "once", "always" or "deny". An "always" is remembered for the rest of the
session per (kind, scope), so a fetch approval never approves anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Answer = Literal["once", "always", "deny"]
Confirm = Callable[[str, str], Answer]  # (action, scope) -> answer


@dataclass
class Approvals:
    """The session's approvals. `confirm` is None when nobody can be asked (one-shot
    without a terminal); `ask` then returns None and the caller refuses."""

    confirm: Confirm | None = None
    granted: set[tuple[str, str]] = field(default_factory=set)

    def ask(self, kind: str, action: str, scope: str) -> Answer | None:
        """The person's answer, "always" at once for a scope granted before, or None
        when there is nobody to ask."""
        if (kind, scope) in self.granted:
            return "always"
        if self.confirm is None:
            return None
        answer = self.confirm(action, scope)
        if answer == "always":
            self.granted.add((kind, scope))
        return answer
