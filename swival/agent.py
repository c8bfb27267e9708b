"""The agent loop: one user request in, a stream of events out.

`Agent.run_turn(text)` alternates model calls and tool calls until the model answers
without calling a tool, the turn limit is reached, or the user interrupts. It never
prints. The context engine decides what the model sees; the registry runs the tools.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from swival.context.engine import ContextEngine, Prepared
from swival.errors import ContextExhausted, ContextOverflowError, ProviderError
from swival.events import (
    Compacted,
    Continued,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    Notice,
    ReplyRestarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from swival.messages import Message, ToolCall, ToolResult, Usage
from swival.providers.base import (
    ChatRequest,
    Completion,
    Provider,
    Restart,
    TextChunk,
    complete,
)
from swival.providers.repair import repair_note
from swival.redaction import Redactor
from swival.tools.base import SubagentTotals, ToolContext
from swival.tools.mentions import attach
from swival.tools.registry import ToolRegistry
from swival.tools.undo import Undone, UndoRefused
from swival.words import plural

if TYPE_CHECKING:
    from swival.providers.factory import Connector

MAX_OVERFLOW_RETRIES = 4
MAX_CONTINUATIONS = 2  # replies cut by the output limit in a row before the turn stops
RECAP_OUTPUT_TOKENS = 1024
INTERRUPTED_RESULT = "[interrupted by the user before this call finished; it may not have run]"
CONTINUE_NOTE = ("[Your reply was cut off by the output limit. Continue exactly where it "
                 "stopped; do not repeat what you already wrote.]")
CUT_CALL_RESULT = (
    "error: not run. Your reply reached the output limit ({limit} tokens) while writing this "
    "call, so its arguments are incomplete. Write smaller pieces: create a file with its "
    "first part and add the rest with edit_file, or split the work over several calls."
)
READ_ONLY_ON = ("[Plan mode: from now on you only have tools that change nothing ({}). Do "
                "not try to edit files or run commands: explain, or write a plan for the user "
                "to approve.]")
READ_ONLY_OFF = "[Plan mode is over: all your tools are available again ({}).]"
_READ_ONLY_ON_HEAD, _READ_ONLY_OFF_HEAD = READ_ONLY_ON[:24], READ_ONLY_OFF[:20]
OUTPUT_LIMIT_TEXT = (
    "The reply was cut off by the output limit ({limit} tokens a reply) {count} times in a "
    "row, so it is incomplete. Raise --max-output-tokens (or load a larger window), or ask for a "
    "shorter answer."
)


def make_summarizer(
    provider: Provider, temperature: float | None = None
) -> Callable[[str, Sequence[Message]], str | None]:
    """A tool-free model call the context engine uses for recaps; None on failure."""

    def summarize(instructions: str, messages: Sequence[Message]) -> str | None:
        request = ChatRequest(
            messages=[Message("system", instructions), *messages],
            max_output_tokens=RECAP_OUTPUT_TOKENS,
            temperature=temperature,
        )
        try:
            text = complete(provider, request).message.content.strip()
        except ProviderError:
            return None
        return text or None

    return summarize


class ToolSource(Protocol):
    """Tools that arrive after start-up (MCP servers): `settle()` runs before every model
    request; the first time it waits for them and installs them (yielding notices), so
    the tool list is fixed before the first request; later calls do nothing. `replan`
    fits them again to what changed since (the window, plan mode), once they are fixed,
    and returns what to tell the user."""

    def settle(self) -> Iterator[Event]: ...

    def replan(self, input_budget: int | None = None) -> list[str]: ...


@dataclass(frozen=True)
class AgentConfig:
    max_turns: int = 100
    temperature: float | None = None
    # Secrets: put out of sight in requests and tool results (content and metadata)
    # before the model, the transcript or the screen sees them.
    redactor: Redactor = field(default_factory=Redactor)
    tool_source: ToolSource | None = None
    # How to reach the server again for another of its models (/model); None: cannot.
    connector: Connector | None = None
    # A subagent's run (the task tool): its edits belong to the parent's request, so
    # /undo reverts them with the parent's.
    subagent: bool = False


class Agent:
    """One session: a provider, the tools, the context engine and the running totals."""

    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry,
        context: ContextEngine,
        tool_ctx: ToolContext,
        config: AgentConfig,
    ) -> None:
        self.provider = provider
        self.tools = tools
        self.context = context
        self.tool_ctx = tool_ctx
        self.config = config
        self._pending: list[ToolCall] = []
        self._turn = 0  # model calls in the current request (for --max-turns)
        self._clock = 0  # model calls in the whole session (what the context engine sees)
        self._calls = 0
        self._usage = Usage()
        self._cuts = 0  # replies cut by the output limit in a row
        self._reply_limit = 0  # max_tokens of the last request
        self._notes: list[str] = []  # for the model, sent with the next request
        # After /model to a model whose window is unknown (LM Studio loads it on its first
        # request): "switched", then "sent" once a request reached it, when it is read again.
        self._window_check = ""

    def run_turn(self, text: str) -> Iterator[Event]:
        """Handle one user request. The last event is always `TurnFinished`.

        A reply cut by the output limit is never taken as the answer: it is continued,
        or, when the cut fell inside a tool call, the call is refused with a request for
        smaller pieces; after MAX_CONTINUATIONS cuts in a row the turn stops with
        "output_limit". On Ctrl-C the caller catches KeyboardInterrupt and calls
        `interrupted()`, which answers any unanswered tool call so the conversation
        stays valid.
        """
        yield from self._begin(text)
        self._turn, self._calls, self._usage = 0, 0, Usage()
        self._cuts = 0  # an earlier request's cuts are not this one's
        parts: list[str] = []  # texts of cut replies, joined with the one that finishes
        while self._turn < self.config.max_turns:
            self._turn += 1
            self._clock += 1
            completion = yield from self._call_model(continues=bool(parts))
            message = completion.message
            self.context.add_assistant(message)
            if completion.finish_reason == "length":
                stop = yield from self._after_cut(message, parts)
                if stop is not None:
                    yield stop
                    return
                continue
            if not message.tool_calls:
                yield from self._reread_window()
                yield from self.context.end_turn(self._clock)
                yield self._finished("".join(parts) + message.content, "done")
                return
            parts.clear()
            self._pending = list(message.tool_calls)
            while self._pending:
                yield from self._run_tool(self._pending[0])
            yield from self.context.after_tool_batch(self._clock)
        yield self._finished(
            f"Stopped after {plural(self.config.max_turns, 'model call')} without a final answer "
            "(raise --max-turns to allow more).",
            "max_turns",
        )

    def _begin(self, text: str) -> Iterator[Event]:
        """Start a request: name it for /undo (which reverts a request's edits as one),
        attach the paths it @mentions, and add it to the conversation."""
        text = self.config.redactor.redact(text)
        if self.tool_ctx.undo is not None and not self.config.subagent:
            self.tool_ctx.undo.begin(text)
        mentions = attach(text, self.tool_ctx)
        notes = "\n\n".join(part for part in (*self._notes, self._mode_note()) if part)
        self._notes = []
        sent = self.context.add_user(text, self.config.redactor.redact(notes),
                                     mentions.attached, mentions.note)
        for item, cut in zip(mentions.attached, sent.parts, strict=True):
            summary = item.sent(self.tool_ctx, cut.kept_lines if cut else None)
            yield Notice(f"Attached @{item.shown} ({summary}).")
        for problem in mentions.problems:
            yield Notice(self.config.redactor.redact(problem), "warning")
        if sent.cut is not None:
            yield Notice(sent.notice(), "warning")

    def note(self, text: str) -> None:
        """Tell the model `text` with the next request (e.g. what /undo changed)."""
        self._notes.append(text)

    def _mode_note(self) -> str:
        """The plan-mode note for this request: one, saying the mode the tools are in,
        when that differs from what the conversation tells the model now (its newest
        plan-mode note; none: all tools). However often /plan was toggled in between,
        the model never gets contradicting notes; and when compaction dropped the note
        that told it, the next request tells it again."""
        on = self.tools.read_only
        if on == self._told_read_only():
            return ""
        return (READ_ONLY_ON if on else READ_ONLY_OFF).format(", ".join(self.tools.names))

    def _told_read_only(self) -> bool:
        """The mode the newest plan-mode note still in the conversation announced."""
        for message in reversed(self.context.history):
            if message.role != "user":
                continue
            on, off = message.content.rfind(_READ_ONLY_ON_HEAD), message.content.rfind(
                _READ_ONLY_OFF_HEAD)
            if on >= 0 or off >= 0:
                return on > off
        return False

    def _after_cut(self, message: Message, parts: list[str]
                   ) -> Generator[Event, None, TurnFinished | None]:
        """A reply the output limit cut: refuse its tool calls (their arguments are
        incomplete) or keep its text and ask the model to go on. The TurnFinished to
        end with once the cuts pass MAX_CONTINUATIONS, else None."""
        self._cuts += 1
        limit = self._reply_limit
        for call in message.tool_calls:
            yield ToolStarted(call)
            result = ToolResult(CUT_CALL_RESULT.format(limit=limit), is_error=True, meta={
                "summary": "not run: the output limit cut the reply off inside this call"})
            yield ToolFinished(call, self.context.add_tool_result(call, result,
                                                                  read_only=True), 0.0)
        if message.tool_calls:
            yield from self.context.after_tool_batch(self._clock)
        else:
            parts.append(message.content)
        if self._cuts > MAX_CONTINUATIONS:
            finished = self._finished(OUTPUT_LIMIT_TEXT.format(count=self._cuts, limit=limit),
                                      "output_limit")
            return replace(finished, partial="".join(parts))
        if not message.tool_calls:
            self.context.add_note(CONTINUE_NOTE)
            yield Continued(self._cuts, limit)
        return None

    def clear(self) -> None:
        """/clear: forget the conversation, the context's knowledge and ledger, which
        files were read (so writes need a fresh read) and the repeated-call record."""
        self.context.clear()
        self.tool_ctx.read_files.clear()
        self.tools.reset()

    def set_read_only(self, on: bool) -> list[str] | None:
        """Offer only the tools that change nothing (plan mode), or all of them again; the
        next request tells the model if the mode differs from what it was last told (see
        `_mode_note`). None when the mode was already so, else what the tool source said
        about fitting its tools to the mode."""
        if self.tools.read_only == on:
            return None
        self.tools.read_only = on
        source = self.config.tool_source
        told = source.replan() if source is not None else []
        self.context.set_tool_schemas(self.tools.schemas())
        return told

    @property
    def project_root(self) -> Path:
        """The workspace the session works in (where its files and .swival/ are)."""
        return self.tool_ctx.root

    def listen(self, sink: Callable[[Event], None]) -> None:
        """Send the steps of a subagent (a task call) to `sink` while the call runs."""
        self.tool_ctx.on_event = sink

    def describe_sandbox(self) -> str:
        """How commands run, in one line for people (e.g. the start-up line)."""
        return self.tool_ctx.sandbox.describe()

    @property
    def subagent_totals(self) -> SubagentTotals:
        """The session's subagent runs so far (tasks, failures, their tokens)."""
        return self.tool_ctx.subagents

    def undo_last(self, force: bool = False) -> Undone | UndoRefused | None:
        """Revert the file edits of the newest request not yet undone (see
        `UndoJournal.undo`); None when there is nothing to undo."""
        journal = self.tool_ctx.undo
        return journal.undo(force=force) if journal is not None else None

    def use_provider(self, provider: Provider) -> list[Compacted]:
        """Talk to `provider` (another model) from now on: the context budgets on its
        window and recaps go to it; the compactions that made the conversation fit the
        new window, if it had to shrink."""
        self.provider = provider
        known = provider.info.window.known or self.config.connector is None
        self._window_check = "" if known else "switched"
        summarize = make_summarizer(provider, self.config.temperature)
        window = provider.info.window
        return self.context.use_model(window.budget_tokens, summarize, self._clock,
                                      window.confirmed_tokens)

    def _reread_window(self) -> Iterator[Event]:
        """Once a request reached a model switched to with its window unknown (LM Studio
        loads a model on its first request, and only then reports its window): detect it
        again and budget on it, or say which window is assumed and how to set it."""
        if self._window_check != "sent" or self.config.connector is None:
            return
        self._window_check, model = "", self.provider.info.model
        try:
            fresh: Provider | None = self.config.connector.connect(model)
        except ProviderError:
            fresh = None
        if fresh is None or not fresh.info.window.known or fresh.info.model != model:
            yield Notice(f"{model}'s window is still unknown after its first request: "
                         f"budgeting on {self.provider.info.window.budget_tokens} tokens. If "
                         "it runs with another, set max_context_tokens (--max-context-tokens) "
                         "to it.", "warning")
            return
        yield from self.use_provider(fresh)
        yield Notice(f"{model} is loaded: window {fresh.info.window.describe()}; the budget "
                     "follows it now.")

    def interrupted(self) -> TurnFinished:
        """Close an interrupted turn: answer pending tool calls with a synthetic result."""
        history = self.context.history
        if history and history[-1].role == "user":
            # The model call itself was cut: keep roles alternating for the next request.
            self.context.add_assistant(Message("assistant", "[reply interrupted by the user]"))
        for call in self._pending:
            self.context.add_tool_result(
                call, ToolResult(INTERRUPTED_RESULT, is_error=True), read_only=True
            )
        self._pending = []
        return self._finished("", "interrupted")

    def _finished(self, answer: str, reason: str) -> TurnFinished:
        return TurnFinished(
            answer=answer, reason=reason, turns=self._turn,  # type: ignore[arg-type]
            tool_calls=self._calls, usage=self._usage,
        )

    def _call_model(self, continues: bool = False) -> Generator[Event, None, Completion]:
        """Send the prepared context; compact and retry when the server reports an overflow.
        `continues`: the reply goes on from a cut one (its text is joined as written)."""
        if self.config.tool_source is not None:
            yield from self.config.tool_source.settle()
        yield from self._reread_window()
        for _ in range(MAX_OVERFLOW_RETRIES + 1):
            prepared = self.context.prepare(self._clock)
            yield from prepared.events
            request = ChatRequest(
                messages=prepared.messages,
                tools=self.tools.schemas(),
                max_output_tokens=prepared.max_output_tokens,
                estimated_prompt_tokens=prepared.estimated_tokens,
                temperature=self.config.temperature,
                continues=continues,
            )
            yield ModelCallStarted(prepared.estimated_tokens, self.context.settings.window)
            completion: Completion | None = None
            try:
                for item in self.provider.stream(request):
                    if isinstance(item, TextChunk):
                        yield TextDelta(item.text)
                    elif isinstance(item, Restart):
                        yield ReplyRestarted(item.reason)
                    else:
                        completion = item
            except ContextOverflowError as error:
                yield from self.context.on_overflow(error, self._clock)
                continue
            assert completion is not None  # the protocol ends every stream with one
            again = yield from self._ask_again(completion, prepared)
            if again:
                continue
            if completion.notes:
                yield Notice("Repaired: " + "; ".join(completion.notes) + ".")
            if completion.finish_reason != "length":
                self._cuts = 0
            self._reply_limit = prepared.max_output_tokens
            self._window_check = "sent" if self._window_check else ""
            return completion
        raise ContextExhausted(
            "The server kept rejecting the prompt as too long even after compaction. "
            "Load the model with a larger context window or pass a smaller --max-context-tokens."
        )

    def _ask_again(self, completion: Completion, prepared: Prepared
                   ) -> Generator[Event, None, bool]:
        """Count the reply's usage; True (after compacting) when it must be asked again:
        the server cut the prompt, or the window's room cut the reply short. Either way
        the reply is void (ReplyRestarted), as when the connection drops."""
        cut = None
        if completion.usage is not None:
            cut = self.context.record_usage(completion.usage, prepared)
            self._usage = Usage(
                self._usage.prompt_tokens + completion.usage.prompt_tokens,
                self._usage.completion_tokens + completion.usage.completion_tokens,
            )
        yield ModelCallFinished(completion.usage, prepared.estimated_tokens)
        if cut is not None:
            # The reply was written without the part of the prompt the server dropped.
            yield ReplyRestarted(f"{cut} Compacting to fit and asking again.")
            yield from self.context.on_overflow(cut, self._clock)
            return True
        if completion.finish_reason == "length" and prepared.room_limited:
            room = self.context.make_room(self._clock)
            if room:  # the window, not the limit, cut it: make room, ask again
                yield ReplyRestarted("The reply ran out of room in the context window; "
                                     "compacting and asking again.")
                yield from room
                return True
        return False

    def _run_tool(self, call: ToolCall) -> Iterator[Event]:
        yield ToolStarted(call)
        started = time.monotonic()
        result = self.tools.run(call, self.tool_ctx)
        note = repair_note(call)
        if note is not None:  # tell the model what was fixed, so it can write it right
            result = replace(result, content=f"{note}\n{result.content}")
        redactor = self.config.redactor
        if redactor:
            result = replace(result, content=redactor.redact(result.content),
                             meta=redactor.scrub(result.meta))
        if result.effect is not None:
            result, events = self.context.apply_effect(call, result, self._clock)
            yield from events
        shown = self.context.add_tool_result(
            call, result, read_only=self.tools.is_read_only(call.name)
        )
        self._pending.pop(0)  # answered: an interrupt from here on must not answer it again
        self._calls += 1
        yield ToolFinished(call, shown, time.monotonic() - started)
