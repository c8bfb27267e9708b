"""The context engine: the facade the agent calls. It holds the conversation as a value
(`History`, history.py) and its collaborators — the token counter and calibration,
the gate (budget and choice of rewrite), the ledger, knowledge, the transcript and the
recaps (recaps.py) — and replaces the history with what the passes return.

The agent calls, in order, for every turn:

    add_user(text, extra)             a request (add_note: a harness note instead)
    prepare(turn) -> Prepared         the gate; exactly what to send
    record_usage(usage, prepared)     calibration; a cut prompt comes back as an overflow
    add_assistant(message)
    apply_effect(call, result, turn)  think / todo / snapshot, then for every call:
    add_tool_result(call, result, read_only=...)
    after_tool_batch(turn)            tail notes, checkpoints, the gate again
    end_turn(turn)                    between requests

and `on_overflow(error, turn)` when the server rejects or cuts a prompt, `make_room`
when a reply ran out of room in the window. Between requests, `use_model` follows a
switch of model (/model) and `set_tool_schemas` one of the tools offered (MCP, /plan).

Prefix stability: between rewrites the history only grows at its end, the system prompt
never changes, and the pinned block is rendered only at rewrites that drop turns. Notes
due now (Knowledge.tail_notes) go at the end of the newest message not yet sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from swival.context import pinned, snapshot
from swival.context.api import ContextSettings, ContextUsage, Prepared
from swival.context.background import Background, Checkpoints
from swival.context.budget import OUTPUT_FLOOR, Budget, exhausted_text
from swival.context.calibration import Calibration, Reading
from swival.context.compactor import NEARLY_FULL, Compactor, State
from swival.context.gate import Gate
from swival.context.history import Facts, History
from swival.context.intake import Intake, Part, Sent
from swival.context.knowledge import Knowledge
from swival.context.ledger import Ledger
from swival.context.measure import Measure
from swival.context.recaps import Recaps
from swival.context.restore import Restorer
from swival.context.resume import rebuild, transcript_meta
from swival.context.snapshot import Refused, Restored
from swival.context.storage import Memory, ServerAid, Storage
from swival.context.summarize import Summarizer
from swival.context.tokens import TokenCounter
from swival.context.transcript import replay
from swival.errors import ContextExhausted, ContextOverflowError
from swival.events import Checkpointed, Compacted
from swival.messages import Message, ToolCall, ToolResult, Usage

__all__ = ["ContextEngine", "ContextSettings", "Prepared", "ServerAid", "Storage", "Summarizer"]


class ContextEngine:
    """See the module docstring for the call order and the guarantees."""

    def __init__(self, settings: ContextSettings, system_prompt: str,
                 tool_schemas: Sequence[Any], *, storage: Storage | Memory | None = None,
                 server: ServerAid | None = None) -> None:
        """`storage`: where the session is kept (None keeps everything in memory: no
        transcript, nothing saved, todos not written); `server`: what the model server
        does for the engine (recaps, its own prompt counts)."""
        server = server or ServerAid()
        self.settings, self.storage = settings, storage or Memory()
        self.knowledge = Knowledge(self.storage.state_dir if self.storage.keep_todos else None)
        self.counter = TokenCounter()
        self.calibration = Calibration()
        self.gate = Gate(Budget(settings.window, settings.max_output_tokens,
                                settings.compaction_trigger, settings.compaction_target))
        self._view = pinned.View(Message("system", system_prompt))
        self._schemas = tuple(tool_schemas)
        self._measure = Measure(self.counter, self.calibration, self._view, tool_schemas,
                                server.count)
        self.recaps = Recaps(server.summarize, self.counter.text, self.gate,
                             self.storage.where(), self.knowledge.checkpoint_text,
                             lambda: self._ledger.latest)
        self._compactor = Compactor(self._measure, self.gate, self._render, self.recaps,
                                    self._record)
        self._restorer = Restorer(self._compactor, self.knowledge, self._render)
        self._transcript = self.storage.transcript()
        self._checkpoints = Checkpoints(Background(self.recaps.checkpoint), self.knowledge,
                                        self.counter.text) if (
            settings.proactive_summaries and server.summarize) else None
        self._fresh_state()

    @property
    def session_id(self) -> str:
        return self.storage.session_id

    @property
    def transcript_path(self) -> Path | None:
        return self.storage.transcript_path

    def _intake(self) -> Intake:
        return Intake(self.budget.input_budget, self.settings.tool_result_share,
                      self.counter.text, self.storage.save)

    def _fresh_state(self) -> None:
        self._state = State()
        self._ledger = Ledger.for_budget(self.budget.input_budget)
        self._last: tuple[Prepared, int] | None = None  # the last request, our raw count
        # The server's whole-prompt figure for a request, our raw count and its history.
        self._anchor: tuple[int, int, History] | None = None
        self._retooled = 0  # re-processing counted for tool changes since that request
        self._batch: list[bool] = []  # read-only flags of the calls in this batch
        self._notes: list[str] = []  # notes waiting for the next user message
        if self._checkpoints:
            self._checkpoints.reset()

    # ----- reading ---------------------------------------------------------------------

    @property
    def budget(self) -> Budget:
        return self.gate.budget

    @property
    def history(self) -> tuple[Message, ...]:
        """The conversation without the system prompt and pinned block."""
        return self._state.history.messages()

    def messages(self) -> list[Message]:
        """What would be sent now: system prompt, pinned block (if any), history."""
        return list(self._view.messages(self._state.history))

    def estimate(self) -> int:
        """Calibrated tokens of the prompt as it stands (messages + tool schemas)."""
        return self._measure.tokens(self._state.history)

    # ----- appending -------------------------------------------------------------------

    def _append(self, message: Message, facts: Facts | None = None,
                meta: dict[str, Any] | None = None) -> None:
        state = self._state
        state.history = state.history.add(message, facts, self.counter.message)
        state.last_level = 0
        if self._transcript:
            self._transcript.message(message, meta)

    def add_user(self, text: str, extra: str = "", parts: Sequence[Part] = (),
                 heading: str = "") -> Sent:
        """Append a request with what the harness attaches to it (`parts`, e.g. files
        named with @, after a `heading` line) and adds after it (`extra`: notes); the
        ledger records the request alone. Each is cut to the window (intake.py);
        returns what the model got."""
        self._ledger.record_user(text)
        content, sent = self._intake().request(text, (heading, parts), extra)
        self.add_note(content)
        return sent

    def add_note(self, text: str) -> None:
        """A note from the harness to the model, as a user message the ledger does not
        record as a request; notes waiting for a user message ride along."""
        if self._notes:
            text, self._notes = text + "\n\n" + "\n".join(self._notes), []
        self._append(Message("user", text))

    def add_assistant(self, message: Message) -> None:
        self._batch = []
        self._append(message)

    def add_tool_result(self, call: ToolCall, result: ToolResult, *, read_only: bool
                        ) -> ToolResult:
        """Cap, record and append one result; return it as the model will see it (with
        `meta["context_cut"]` and `meta["spill_path"]` when it was cut: intake.py)."""
        final = self._intake().tool_result(result, call.name)
        message = Message("tool", final.content, tool_call_id=call.id, name=call.name)
        self._ledger.record_result(call, result)
        self._batch.append(read_only)
        self._append(message, Facts.of(call, result, read_only),
                     transcript_meta(final, read_only))
        return final

    def after_tool_batch(self, turn: int) -> list[Compacted | Checkpointed]:
        """Tell knowledge about the batch, deliver due notes at the tail, collect and
        start checkpoints, run the gate."""
        if self._batch:
            self.knowledge.observe_batch(turn, len(self._batch), all(self._batch))
        self._batch = []
        notes = self.knowledge.tail_notes(turn)
        if notes:
            self._attach(notes)
        events: list[Compacted | Checkpointed] = list(self._proactive(turn))
        self._measure.count_exactly(self._state.history, self.budget.trigger)
        return events + self._compactor.due(self._state, turn, "after tool results")

    def _attach(self, notes: list[str]) -> None:
        state = self._state
        unsent = len(state.history.messages()) > len(state.sent.messages())
        noted = state.history.noted("\n".join(notes), self.counter.message) if unsent else None
        if noted is None:  # nothing unsent to carry them: they ride on the next user message
            self._notes.extend(notes)
            return
        state.history = noted
        if self._transcript and (last := noted.last_message()):
            self._transcript.amend(last)

    def end_turn(self, turn: int) -> list[Checkpointed]:
        """Between user requests: collect and start proactive checkpoints."""
        return self._proactive(turn)

    def _proactive(self, turn: int) -> list[Checkpointed]:
        checkpoints, messages = self._checkpoints, self._state.history.messages()
        return checkpoints.step(turn, messages) if checkpoints else []

    # ----- the gate and compaction -------------------------------------------------------

    def prepare(self, turn: int) -> Prepared:
        """Compact if needed and return the request. Raises ContextExhausted (exit 5)
        when even the deepest compaction leaves too little room for a reply."""
        self._measure.count_exactly(self._state.history, self.budget.trigger)
        self._follow_server()
        events = self._compactor.due(self._state, turn, "before model call")
        raw = self._measure.raw(self._state.history)
        estimate = self.calibration.apply(raw)
        reply = self.budget.reply_tokens(estimate)
        if reply < min(OUTPUT_FLOOR, self.budget.max_output_tokens):
            raise ContextExhausted(self._exhausted_text(estimate))
        self._state.sent, self._retooled = self._state.history, 0
        prepared = Prepared(tuple(self.messages()), reply, estimate, tuple(events),
                            room_limited=reply < self.budget.max_output_tokens)
        self._last = (prepared, raw)
        return prepared

    def _follow_server(self) -> None:
        """Since the server's last whole-prompt figure the history only grew: it counts
        at least that much more (calibration.follow). Not after a rewrite."""
        if self._anchor is None:
            return
        reported, raw_then, then = self._anchor
        history = self._state.history
        if history.extends(then):
            self.calibration.follow(reported, raw_then, self._measure.raw(history))

    def make_room(self, turn: int) -> list[Compacted]:
        """A reply ran out of room in the window: compact down to the target when the
        prompt is above it (nothing to gain otherwise; then [])."""
        if self.gate.enough(self.estimate()):
            return []
        return self._compactor.run(self._state, turn, "reply cut short by the window",
                                   self._state.last_level + 1)

    def compact(self, level: int, reason: str, turn: int,
                focus: str | None = None) -> Compacted | None:
        """/compact (level 1) and /compact --drop (levels 1 then 2, the recap guided by
        `focus`: what the user wants it to keep). The ledger is kept either way."""
        return self._compactor.by_request(self._state, level, (reason, turn), focus)

    def use_model(self, window: int, summarize: Summarizer | None, turn: int,
                  confirmed: int = 0) -> list[Compacted]:
        """Another model from now on (/model): budget on its `window` (`confirmed`: the
        one the server said it runs, or 0), count afresh (its tokenizer differs), recap
        through `summarize`, and compact at once when the conversation no longer fits;
        the compactions that took."""
        self.recaps.summarize = summarize
        self.settings = replace(self.settings, window=window, confirmed_window=confirmed)
        self.gate.budget = replace(self.budget, window=window)
        self.calibration.forget()
        self._anchor = None
        self._measure.recount()
        self._state.sent = History()  # the new model has nothing cached: nothing to lose
        return self._compactor.due(self._state, turn, "model switched", wait=False)

    def _render(self, history: History) -> Message | None:
        return pinned.render(self._ledger, self.knowledge.pinned_sections(), history,
                             self.storage.where())

    def _record(self, history: History, event: Compacted) -> None:
        if self._checkpoints:
            self._checkpoints.rewritten(len(history.messages()))
        if self._transcript:
            self._transcript.history(history.messages(), history.recap)
            self._transcript.compacted(event)

    # ----- what the server said ----------------------------------------------------------

    def record_usage(self, usage: Usage, prepared: Prepared) -> ContextOverflowError | None:
        """Fold the server's prompt size for `prepared` into the calibration (see
        calibration.py for which figures count and how); a `truncated` overflow, with the
        window the server really runs, when the figure shows it silently cut the prompt
        (the agent hands it to `on_overflow` and asks again)."""
        if self._last is None or self._last[0] is not prepared:
            return None
        complete = self.settings.counts_include_cache or usage.cached_tokens is not None
        reading = Reading(usage.prompt_tokens, self._last[1], complete)
        cut = self.calibration.judge(reading, self.budget.window, prepared.estimated_tokens,
                                     self.settings.confirmed_window)
        self._anchor = (usage.prompt_tokens, self._last[1], self._state.sent) if (
            complete and cut is None) else None
        return cut

    def on_overflow(self, error: ContextOverflowError, turn: int) -> list[Compacted]:
        """The server rejected (or cut) the last prompt: adopt its figures, compact one
        level deeper than last time (past level 3, the emergency drop again), and let
        the agent retry. ContextExhausted when there is nothing left to compact."""
        sent = self._last[1] if self._last is not None else None
        if error.window and error.kind != "truncated":  # said outright: a cut is no lesson
            self.settings = replace(self.settings, confirmed_window=error.window)
        events = self._compactor.overflow(self._state, error, turn, sent)
        if not events:
            raise ContextExhausted(self._exhausted_text(self.estimate()))
        return events

    def _exhausted_text(self, estimate: int) -> str:
        return exhausted_text(self.budget, estimate, self._measure.schema_tokens,
                              self.storage.where() if self.transcript_path else None,
                              self.settings.interactive)

    # ----- knowledge and snapshots ---------------------------------------------------------

    def apply_effect(self, call: ToolCall, result: ToolResult, turn: int
                     ) -> tuple[ToolResult, list[Compacted]]:
        """Carry out a tool's effect; the returned result is not yet added (the agent
        adds it with add_tool_result, as for any tool). The results the engine writes
        carry their kind ("thought", "note", "summary") for compaction's scoring."""
        return self._restorer.apply(self._state, result, turn)

    def save(self, label: str | None) -> snapshot.Saved:
        """/save: a checkpoint after the current turn."""
        return self._restorer.save(self._state, label)

    def cancel(self) -> snapshot.Cancelled:
        """/unsave."""
        return self._restorer.cancel(self._state)

    def status(self) -> snapshot.Status:
        return snapshot.status(self._state.scope, self._state.history)

    def restore(self, force: bool, turn: int) -> Refused | Restored:
        """/restore: the summarizer writes the summary of the scope, which is collapsed."""
        return self._restorer.by_user(self._state, self.recaps.recapper(), force, turn)

    def todos(self) -> list[tuple[int, str, bool]]:
        """(id, text, done) of every todo item, for /todo."""
        return self.knowledge.todos()

    # ----- for the REPL ------------------------------------------------------------------------

    def usage(self) -> ContextUsage:
        """Tokens per part in our own count (steady while the part is), their total as
        the server counts it, the budget's figures and the compactions' cost."""
        budget = self.budget
        return ContextUsage(
            **self._measure.parts(self._state.history),
            counted=self._measure.raw(self._state.history), used=self.estimate(),
            factor=self.calibration.factor, window=budget.window,
            input_budget=budget.input_budget, output_reserve=budget.output_reserve,
            trigger=budget.trigger, target=budget.target,
            emergency=int(NEARLY_FULL * budget.input_budget),
            compactions=self._state.compactions, reprocessed=self._state.reprocessed)

    def set_tool_schemas(self, schemas: Sequence[Mapping[str, Any]]) -> int:
        """The tool list may have changed (MCP servers settled, /mcp, /plan). When the
        schemas differ from those in use, they are counted from now on; since they come
        first in the prompt, the next request makes the server compute the whole prompt
        again: returns those tokens (0 before the first request, and 0 when nothing
        changed) and adds them to the re-processing count that /context shows, once
        however often the list changes before that request."""
        if tuple(schemas) == self._schemas:
            return 0
        self._schemas = tuple(schemas)
        self._measure.set_schemas(self._schemas)
        self._anchor = None  # the server's figure covered the old schemas
        if self._last is None:
            return 0
        tokens = self.estimate()
        # Changed twice before a request (/plan, then its MCP re-plan): computed once.
        self._state.reprocessed += tokens - self._retooled
        self._retooled = tokens
        return tokens

    def clear(self) -> None:
        """/clear: forget the conversation, ledger, knowledge and snapshot state."""
        self._fresh_state()
        self.knowledge.clear()
        if self._transcript:
            self._transcript.clear()

    def load_transcript(self, path: Path) -> int:
        """Continue the session recorded in `path` (--continue / --resume): rebuild the
        history, recap, ledger and result facts, reload knowledge, and keep appending
        to the same file. Returns the number of messages restored."""
        state = replay(path)
        self._fresh_state()
        self._ledger, history = rebuild(state, lambda: Ledger.for_budget(
            self.budget.input_budget), self.counter.message)
        self.knowledge.reload()
        if state.rewritten:
            history = replace(history, pinned=self._render(history))
        self._state.history = history
        self.storage = self.storage.resumed(path)
        self.recaps.transcript = self.storage.where()
        if self._transcript:
            self._transcript.close()
        self._transcript = self.storage.transcript(path)
        return len(state.history)
