"""The approval questions of the REPL: a command the policy cannot allow by itself, and
any other approval (a fetch, an MCP tool, an edit with its diff). While a subagent runs,
the question says it is that subagent asking ("Subagent 1 asks: run `make`?").

The question is printed above a short answer prompt; the prompt is wrapped between
words to the terminal's width. Keys typed before the question appeared are dropped, so
type-ahead meant for the next request cannot answer it. The time spent here is not
counted as the tool's time (the view's `paused`).
"""

from __future__ import annotations

import textwrap
from typing import Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output

from swival.render import TurnView
from swival.repl.terminal import drop_type_ahead
from swival.tools.policy import Question

Answer = Literal["once", "always", "deny"]
ALWAYS_KEYS = "as"  # the keys that answer "always", one per scope offered


def wrap_words(text: str, width: int) -> str:
    """`text` broken into lines of at most `width` - 1 characters, between words only
    (a word longer than that stays whole); a trailing space is kept."""
    lines = textwrap.wrap(text, width=max(20, width - 1), break_long_words=False,
                          break_on_hyphens=False)
    return "\n".join(lines) + (" " if text.endswith(" ") else "")


class ApprovalPrompts:
    """Asks the person; `input`/`output` None means the real terminal."""

    def __init__(self, view: TurnView, input: Input | None = None,
                 output: Output | None = None) -> None:
        self.view = view
        self.input = input
        self.output = output

    def ask(self, question: Question) -> Answer:
        """Asked by the command policy before a command runs: once, always or deny."""
        with self.view.paused():
            who = self.view.asking
            self.view.message(f"{who.capitalize()} asks: run `{question.shown}`?" if who
                              else f"Run `{question.shown}`?")
            if question.found:
                self.view.message("Needs approval every time: " + "; ".join(question.found)
                                  + ".", "warning")
            programs = ", ".join(question.programs)
            return self._choose((programs,) if programs else ())[0]

    def confirm(self, action: str, scopes: tuple[str, ...], detail: str) -> str:
        """Any other approval (see swival/tools/approval.py): once, deny, or the scope to
        allow always."""
        with self.view.paused():
            if detail:
                self.view.approval_diff(detail)
            who = self.view.asking
            self.view.message(f"{who.capitalize()} asks: {action}?" if who else f"{action}?")
            answer, scope = self._choose(scopes)
            return scope if answer == "always" else answer

    def _choose(self, scopes: tuple[str, ...]) -> tuple[Answer, str]:
        """Read the answer, with the scope chosen for "always" (keys a and s, one per
        scope offered; none offered, no "always"). Only a whole answer counts (y, yes,
        once; n, no, deny or Enter; a or always, s), in any case; anything else is
        asked again."""
        once: tuple[Answer, str] = ("once", "")
        deny: tuple[Answer, str] = ("deny", "")
        answers = {"y": once, "yes": once, "once": once, "n": deny, "no": deny, "deny": deny,
                   "": deny}
        answers.update((key, ("always", scope))
                       for key, scope in zip(ALWAYS_KEYS, scopes, strict=False))
        if scopes:
            answers["always"] = ("always", scopes[0])
        offers = [f"[a]lways allow {scope}" if key == "a" else f"[{key}] always allow {scope}"
                  for key, scope in zip(ALWAYS_KEYS, scopes, strict=False)]
        options = wrap_words(" / ".join(["[y]es once", *offers, "[n]o"]) + ": ",
                             self.view.console.width)
        keys = ", ".join(f"{key} (always)" for key in ALWAYS_KEYS[:len(scopes)])
        if self.input is None:
            drop_type_ahead()
        while True:
            try:
                reply = PromptSession[str](input=self.input, output=self.output)\
                    .prompt(options).strip().lower()
            except EOFError:
                return "deny", ""
            # Ctrl-C here propagates: it cancels the whole turn, like anywhere else.
            choice = answers.get(reply)  # a whole answer: "abort" is not "always"
            if choice is not None:
                return choice
            self.view.message(f"`{reply}` is not one of the answers. Answer y (once), "
                              f"{keys + ', ' if keys else ''}or n (no).", "warning")
