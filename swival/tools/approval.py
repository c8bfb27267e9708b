"""Asking the person before an action outside the command policy: a fetch, an MCP tool
call. One `Approvals` per session; the front end plugs in how to ask.

The question is `confirm(action, scopes)`: `action` says what will happen ("Fetch
https://docs.python.org/3/"), `scopes` what an "always" answer may cover, narrowest first
(("docs.python.org",), or an MCP tool and then its whole server). The reply is "once",
"deny", or the scope the person chose to allow always. An "always" is remembered for the
rest of the session per (kind, scope), so a fetch approval never approves anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Answer = Literal["once", "always", "deny"]
# (action, scopes) -> "once", "deny", or the member of `scopes` to allow always
Confirm = Callable[[str, tuple[str, ...]], str]


@dataclass
class Approvals:
    """The session's approvals. `confirm` is None when nobody can be asked (one-shot
    without a terminal); `ask` then returns None and the caller refuses."""

    confirm: Confirm | None = None
    granted: set[tuple[str, str]] = field(default_factory=set)

    def ask(self, kind: str, action: str, *scopes: str) -> Answer | None:
        """The person's answer, "always" at once when one of `scopes` was granted
        before, or None when there is nobody to ask."""
        if any((kind, scope) in self.granted for scope in scopes):
            return "always"
        if self.confirm is None:
            return None
        reply = self.confirm(action, scopes)
        if reply == "once":
            return "once"
        if reply != "deny" and reply in scopes:
            self.granted.add((kind, reply))
            return "always"
        return "deny"
