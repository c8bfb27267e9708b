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

from prompt_toolkit import PromptSession
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output

from swival.render import TurnView
from swival.render.asking import (
    action_question,
    command_question,
    found_line,
    not_an_answer,
    options,
    read_answer,
)
from swival.repl.terminal import drop_type_ahead
from swival.tools.approval import Answer
from swival.tools.policy import Question


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
            self.view.message(command_question(question.shown, self.view.asking))
            if question.found:
                self.view.message(found_line(question.found), "warning")
            programs = ", ".join(question.programs)
            return self._choose((programs,) if programs else ())[0]

    def confirm(self, action: str, scopes: tuple[str, ...], detail: str) -> str:
        """Any other approval (see swival/tools/approval.py): once, deny, or the scope to
        allow always."""
        with self.view.paused():
            if detail:
                self.view.approval_diff(detail)
            self.view.message(action_question(action, self.view.asking))
            answer, scope = self._choose(scopes)
            return scope if answer == "always" else answer

    def _choose(self, scopes: tuple[str, ...]) -> tuple[Answer, str]:
        """Read the answer, with the scope chosen for "always" (swival/render/asking.py
        says which answers count); anything else is asked again."""
        prompt = wrap_words(options(scopes), self.view.console.width)
        if self.input is None:
            drop_type_ahead()
        while True:
            try:
                reply = PromptSession[str](input=self.input, output=self.output)\
                    .prompt(prompt)
            except EOFError:
                return "deny", ""
            # Ctrl-C here propagates: it cancels the whole turn, like anywhere else.
            choice = read_answer(reply, scopes)
            if choice is not None:
                return choice
            self.view.message(not_an_answer(reply, scopes), "warning")
