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

from swival.agent.cuts import Cuts
from swival.agent.plan import mode_note
from swival.agent.window import WindowCheck
from swival.context.engine import ContextEngine, Prepared
from swival.errors import ContextExhausted, ContextOverflowError, ProviderError
from swival.events import (
    Compacted,
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
RECAP_OUTPUT_TOKENS = 1024
INTERRUPTED_RESULT = "[interrupted by the user before this call finished; it may not have run]"


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
        self._cuts = Cuts()
        self._notes: list[str] = []  # for the model, sent with the next request
        self._window = WindowCheck(config.connector)  # after /model (window.py)

    def run_turn(self, text: str) -> Iterator[Event]:
        """Handle one user request. The last event is always `TurnFinished`.

        A reply cut by the output limit is never taken as the answer (cuts.py); when the
        cuts go on, the turn stops with "output_limit". On Ctrl-C the caller catches
        KeyboardInterrupt and calls `interrupted()`, which answers any unanswered tool
        call so the conversation stays valid.
        """
        yield from self._begin(text)
        self._turn, self._calls, self._usage = 0, 0, Usage()
        self._cuts.count = 0  # an earlier request's cuts are not this one's
        parts: list[str] = []  # texts of cut replies, joined with the one that finishes
        while self._turn < self.config.max_turns:
            self._turn += 1
            self._clock += 1
            completion = yield from self._call_model(continues=bool(parts))
            message = completion.message
            self.context.add_assistant(message)
            if completion.finish_reason == "length":
                stop = yield from self._cuts.after(message, parts, self.context, self._clock)
                if stop is not None:
                    yield replace(self._finished(stop, "output_limit"), partial="".join(parts))
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
        mode = mode_note(self.tools.read_only, self.tools.names, self.context.history)
        notes = "\n\n".join(part for part in (*self._notes, mode) if part)
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

    def clear(self) -> None:
        """/clear: forget the conversation, the context's knowledge and ledger, which
        files were read (so writes need a fresh read) and the repeated-call record."""
        self.context.clear()
        self.tool_ctx.read_files.clear()
        self.tools.reset()

    def set_read_only(self, on: bool) -> list[str] | None:
        """Offer only the tools that change nothing (plan mode), or all of them again; the
        next request tells the model if the mode differs from what it was last told (see
        `plan.mode_note`). None when the mode was already so, else what the tool source said
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
        self._window.switched(provider)
        summarize = make_summarizer(provider, self.config.temperature)
        window = provider.info.window
        return self.context.use_model(window.budget_tokens, summarize, self._clock,
                                      window.confirmed_tokens)

    def _reread_window(self) -> Iterator[Event]:
        """Budget on the window of a model switched to while it was unknown, once it is
        known (see WindowCheck.reread), and say so."""
        fresh, notice = self._window.reread(self.provider)
        if fresh is not None:
            yield from self.use_provider(fresh)
        if notice is not None:
            yield notice

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
                        yield ReplyRestarted(self.config.redactor.redact(item.reason))
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
            self._cuts.replied(completion.finish_reason, prepared.max_output_tokens)
            self._window.sent()
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
        self._calls += 1  # a call that started counts, even if an interrupt cuts it short
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
        yield ToolFinished(call, shown, time.monotonic() - started)
