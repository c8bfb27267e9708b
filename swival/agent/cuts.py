"""Replies cut by the output limit. Such a reply is never taken as the answer: it is
continued, or, when the cut fell inside a tool call, the call is refused with a request
for smaller pieces; after MAX_CONTINUATIONS cuts in a row the turn stops."""

from __future__ import annotations

from collections.abc import Generator

from swival.context.engine import ContextEngine
from swival.events import Continued, Event, ToolFinished, ToolStarted
from swival.messages import Message, ToolResult

MAX_CONTINUATIONS = 2  # replies cut by the output limit in a row before the turn stops
CONTINUE_NOTE = (
    "[Your reply was cut off by the output limit. Continue exactly where it "
    "stopped; do not repeat what you already wrote.]"
)
CUT_CALL_RESULT = (
    "error: not run. Your reply reached the output limit ({limit} tokens) while writing this "
    "call, so its arguments are incomplete. Write smaller pieces: create a file with its "
    "first part and add the rest with edit_file, or split the work over several calls."
)
OUTPUT_LIMIT_TEXT = (
    "The reply was cut off by the output limit ({limit} tokens a reply) {count} times in a "
    "row, so it is incomplete. Raise --max-output-tokens (or load a larger window), or ask for a "
    "shorter answer."
)


class Cuts:
    """The replies of this request cut in a row, and the output limit of the last one."""

    def __init__(self) -> None:
        self.count = 0
        self.limit = 0  # max_tokens of the last request

    def replied(self, finish_reason: str | None, limit: int) -> None:
        """A reply came to a request with `limit` as its max_tokens; a whole one ends the
        run of cuts."""
        if finish_reason != "length":
            self.count = 0
        self.limit = limit

    def after(
        self, message: Message, parts: list[str], context: ContextEngine, turn: int
    ) -> Generator[Event, None, str | None]:
        """A reply the output limit cut: refuse its tool calls (their arguments are
        incomplete) or keep its text in `parts` and ask the model to go on. The answer
        to stop the turn with once the cuts pass MAX_CONTINUATIONS, else None."""
        self.count += 1
        for call in message.tool_calls:
            yield ToolStarted(call)
            result = ToolResult(CUT_CALL_RESULT.format(limit=self.limit), is_error=True, meta={
                "summary": "not run: the output limit cut the reply off inside this call"})
            yield ToolFinished(call, context.add_tool_result(call, result, read_only=True), 0.0)
        if message.tool_calls:
            yield from context.after_tool_batch(turn)
        else:
            parts.append(message.content)
        if self.count > MAX_CONTINUATIONS:
            return OUTPUT_LIMIT_TEXT.format(count=self.count, limit=self.limit)
        if not message.tool_calls:
            context.add_note(CONTINUE_NOTE)
            yield Continued(self.count, self.limit)
        return None
