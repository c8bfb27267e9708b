"""Asking the person before an action outside the command policy: a fetch, an MCP tool
call, a file edit (with `--edits ask`). One `Approvals` per session; the front end plugs
in how to ask.

The question is `confirm(action, scopes, detail)`: `action` says what will happen ("Fetch
https://docs.python.org/3/"), `scopes` what an "always" answer may cover, narrowest first
(("docs.python.org",), an MCP tool and then its whole server, or a file and then every
file), and `detail` what to show before asking (an edit's diff; often empty). The reply
is "once", "deny", or the member of `scopes` the person chose to allow always. An
"always" is remembered for the rest of the session per (kind, scope), so a fetch
approval never approves anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Answer = Literal["once", "always", "deny"]


class Refusal(str):
    """Why a tool may not act: the string itself is worded for the model (what happened
    and what to do next); `shown` says it to the person in a few words."""

    shown: str

    def __new__(cls, text: str, shown: str) -> Refusal:
        made = super().__new__(cls, text)
        made.shown = shown
        return made


def person_words(reason: str) -> str:
    """The person's words for a refusal (its `shown` text) or for a plain reason worded
    for the model (its first sentence, where the model's instructions are not)."""
    if isinstance(reason, Refusal):
        return reason.shown
    first = reason.strip().split(". ", 1)[0].split("\n", 1)[0]
    return first.rstrip(".")
# (action, scopes, detail) -> "once", "deny", or the member of `scopes` to allow always
Confirm = Callable[[str, tuple[str, ...], str], str]


@dataclass
class Approvals:
    """The session's approvals. `confirm` is None when nobody can be asked (one-shot
    without a terminal); `ask` then returns None and the caller refuses."""

    confirm: Confirm | None = None
    granted: set[tuple[str, str]] = field(default_factory=set)

    def ask(self, kind: str, action: str, *scopes: str, detail: str = "") -> Answer | None:
        """The person's answer: "always" at once when one of `scopes` was granted before,
        None when there is nobody to ask."""
        if any((kind, scope) in self.granted for scope in scopes):
            return "always"
        if self.confirm is None:
            return None
        reply = self.confirm(action, scopes, detail)
        if reply == "once":
            return "once"
        if reply != "deny" and reply in scopes:
            self.granted.add((kind, reply))
            return "always"
        return "deny"


EDIT_MODES = ("auto", "ask")
EVERY_FILE = "every file"  # the wider scope an edit approval offers


@dataclass
class EditPolicy:
    """Whether write_file and edit_file may change a file (`ToolContext.approve_edit`):
    "auto" always; "ask" once the person saw the diff and said yes (once, always for that
    file, or always for every file). With nobody to ask, "ask" refuses."""

    mode: str = "auto"
    approvals: Approvals = field(default_factory=Approvals)

    def approve(self, name: str, diff: str, new: bool) -> str | None:
        """None to allow writing `name` (the change shown as `diff`), else why not, worded
        for the model."""
        if self.mode == "auto":
            return None
        action = f"{'Create' if new else 'Change'} {name}"
        answer = self.approvals.ask("edit", action, name, EVERY_FILE, detail=diff)
        # what became of the file, in the model's words and in the person's
        kept = "was not created" if new else "was left unchanged"
        shown = "not written" if new else "not changed"
        if answer is None:
            return Refusal(f"{name} {kept}: this session asks the user before each "
                           "file edit (--edits ask) and nobody is here to approve it. "
                           "Tell the user the change you would make; they can run again "
                           "with --edits auto.",
                           f"{shown}: edits need approval (--edits ask) and this run "
                           "cannot ask")
        if answer == "deny":
            what = f"creating {name}" if new else f"this change to {name}"
            return Refusal(f"the user declined {what}; the file {kept}. Ask them what "
                           "they want instead, or continue without it.",
                           f"{shown}: you declined")
        return None
