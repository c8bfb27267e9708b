"""The context engine: the facade the agent calls. It holds the conversation as a value
(`History`, history.py) and its collaborators — the token counter and calibration,
the gate (budget and choice of rewrite), the ledger, knowledge, the transcript and the
summarizer — and replaces the history with what the passes return.

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from swival.context import caps, pinned, snapshot
from swival.context.api import ContextSettings, ContextUsage, Extras, Prepared
from swival.context.background import Background, Checkpoints
from swival.context.budget import OUTPUT_FLOOR, Budget, exhausted_text
from swival.context.calibration import Calibration, Reading
from swival.context.compactor import Compactor, Recaps, State
from swival.context.gate import Gate
from swival.context.history import Facts, History
from swival.context.knowledge import Knowledge
from swival.context.ledger import Ledger
from swival.context.measure import Measure
from swival.context.restore import Restorer
from swival.context.resume import rebuild, transcript_meta
from swival.context.snapshot import Refused, Restored
from swival.context.summarize import Recapper, Summarizer, fallback_recap
from swival.context.tokens import TokenCounter
from swival.context.transcript import Transcript, new_session_id, replay
from swival.effects import SnapshotEffect, ThinkEffect, TodoEffect
from swival.errors import ContextExhausted, ContextOverflowError
from swival.events import Checkpointed, Compacted
from swival.messages import Message, ToolCall, ToolResult, Usage
from swival.redaction import Redactor

__all__ = ["ContextEngine", "ContextSettings", "Extras", "Prepared", "Summarizer"]

USER_SHARE = 0.5  # a pasted request may take at most this share of the input budget
EXACT_NEAR = 0.9  # share of the trigger from which the server's exact count is asked


class ContextEngine:
    """See the module docstring for the call order and the guarantees."""

    def __init__(self, settings: ContextSettings, system_prompt: str,
                 tool_schemas: Sequence[Any], *, knowledge: Knowledge,
                 extras: Extras | None = None) -> None:
        extras = extras or Extras()
        self.settings, self.knowledge, self.summarize = settings, knowledge, extras.summarize
        self.state_dir = state_dir = extras.state_dir
        self.counter = extras.counter or TokenCounter()
        self.calibration = Calibration()
        self.gate = Gate(Budget(settings.window, settings.max_output_tokens,
                                settings.compaction_trigger, settings.compaction_target))
        self._view = pinned.View(Message("system", system_prompt))
        self._schemas = tuple(tool_schemas)
        self._exact = extras.exact
        self._exactly: History | None = None  # the history last counted by the server
        self._measure = Measure(self.counter, self.calibration, self._view, tool_schemas)
        self.redactor = extras.redactor or Redactor()
        self._on_transcript = extras.on_transcript
        self._on_seal = extras.on_seal
        self.session_id = extras.session_id or new_session_id()
        self.transcript_path = (state_dir / "sessions" / f"{self.session_id}.jsonl"
                                if state_dir else None)
        where = str(self.transcript_path or "no file (no state directory)")
        self._compactor = Compactor(self._measure, self.gate, self._render,
                                    Recaps(self._recap, self._marker, where), self._record)
        self._restorer = Restorer(self._compactor, knowledge, self._render)
        self._transcript = self._open_transcript(self.transcript_path) if (
            self.transcript_path) else None
        self._checkpoints = Checkpoints(Background(self._checkpoint_recap), knowledge,
                                        self.counter.text) if (
            settings.proactive_summaries and self.summarize) else None
        self._fresh_state()

    def _open_transcript(self, path: Path, resume: bool = False) -> Transcript:
        return Transcript(path, self.redactor, resume=resume, on_create=self._on_transcript,
                          on_seal=self._on_seal)

    def _spill(self, stem: str) -> Callable[[str], Path | None]:
        """Saves an oversized text, redacted, in this session's spill folder."""
        return caps.spill_writer(self.state_dir, self.session_id, self.redactor, stem)

    def _fresh_state(self) -> None:
        self._state = State()
        self._ledger = Ledger.for_budget(self.budget.input_budget)
        self._last: tuple[Prepared, int] | None = None  # the last request, our raw count
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

    def add_user(self, text: str, extra: str = "") -> None:
        """Append a request, with `extra` after it: what the harness adds (attached
        files, notes), which the ledger does not record as part of the request. One too
        big for the window is cut to a preview and saved."""
        self._ledger.record_user(text)
        limit = int(self.budget.input_budget * USER_SHARE)
        whole = f"{text}\n\n{extra}" if extra else text
        content, _ = caps.cap_result(whole, {"kind": "generic"}, limit, self.counter.text,
                                     self._spill("request"))
        self.add_note(content)

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
        """Cap, record and append one result; return it as the model will see it."""
        limit = max(64, int(self.budget.input_budget * self.settings.tool_result_share))
        content, path = caps.cap_result(result.content, result.meta, limit, self.counter.text,
                                        self._spill(call.name))
        final = result if path is None and content == result.content else replace(
            result, content=content,
            meta={**result.meta, **({"spill_path": str(path)} if path else {})})
        message = Message("tool", content, tool_call_id=call.id, name=call.name)
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
        self._count_exactly()
        return events + self._compactor.due(self._state, turn, "after tool results")

    def _count_exactly(self) -> None:
        """Where the server counts prompts itself (llama.cpp): before the first request,
        and once per history when the estimate nears the trigger (never far from it)."""
        history = self._state.history
        if self._exact is None or history is self._exactly or (
                self._exactly is not None
                and self.estimate() < EXACT_NEAR * self.budget.trigger):
            return
        self._exactly = history
        self._measure.count_exactly(history, self._exact, self._schemas)

    def _attach(self, notes: list[str]) -> None:
        state = self._state
        last = state.history.last_message()
        unsent = len(state.history.messages()) > len(state.sent.messages())
        if last is not None and last.role == "tool" and unsent:
            amended = replace(last, content=last.content + "\n\n" + "\n".join(notes))
            turns = state.history.turns
            state.history = state.history.with_turns(
                turns[:-1] + (turns[-1].with_last(amended, self.counter.message),))
            if self._transcript:
                self._transcript.amend(amended)
        else:  # nothing unsent to carry them: they ride on the next user message
            self._notes.extend(notes)

    def end_turn(self, turn: int) -> list[Checkpointed]:
        """Between user requests: collect and start proactive checkpoints."""
        return self._proactive(turn)

    # ----- the gate and compaction -------------------------------------------------------

    def prepare(self, turn: int) -> Prepared:
        """Compact if needed and return the request. Raises ContextExhausted (exit 5)
        when even the deepest compaction leaves too little room for a reply."""
        self._count_exactly()
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

    def use_model(self, window: int, summarize: Summarizer | None, turn: int
                  ) -> list[Compacted]:
        """Another model from now on (/model): budget on its `window`, count afresh (its
        tokenizer differs), recap through `summarize`, and compact at once when the
        conversation no longer fits; the compactions that took."""
        self.summarize = summarize
        self.settings = replace(self.settings, window=window)
        self.gate.budget = replace(self.budget, window=window)
        self.calibration.forget()
        self._exactly = None
        return self._compactor.due(self._state, turn, "model switched")

    def _render(self, history: History) -> Message | None:
        return pinned.render(self._ledger, self.knowledge.pinned_sections(), history,
                             str(self.transcript_path or "no file"))

    def _recapper(self) -> Recapper | None:
        if self.summarize is None:
            return None
        return Recapper(self.summarize, self.counter.text,
                        str(self.transcript_path or "the session transcript"),
                        self.budget.input_budget, self._compactor.recap_tokens())

    def _recap(self, history: History, dropped: Sequence[Message],
               focus: str | None) -> str | None:
        """A model recap merged with the previous one; None when there is no model or
        it wrote none (the compactor then drops without one)."""
        recapper = self._recapper()
        return recapper.recap(dropped, history.recap, focus) if recapper else None

    def _marker(self, history: History, dropped: Sequence[Message]) -> str:
        """A recap made without the model: the previous recap, the checkpoint summaries
        and a marker naming the transcript (summarize.fallback_recap)."""
        return fallback_recap(history.recap, len(dropped), self.knowledge.checkpoint_text(),
                              self._compactor.recaps.transcript,
                              self._compactor.recap_tokens() * 6)

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
        return self.calibration.judge(reading, self.budget.window, prepared.estimated_tokens)

    def on_overflow(self, error: ContextOverflowError, turn: int) -> list[Compacted]:
        """The server rejected (or cut) the last prompt: adopt its figures, compact one
        level deeper than last time (past level 3, the emergency drop again), and let
        the agent retry. ContextExhausted when there is nothing left to compact."""
        learned = error.window is not None and error.window < self.budget.window
        if learned and error.window is not None:
            self.gate.budget = replace(self.budget, window=error.window)
        if error.kind == "truncated" and learned:
            pass  # the count is what the server kept, not the prompt: the window is the lesson
        elif error.prompt_tokens and self._last is not None:
            self.calibration.jump(error.prompt_tokens, self._last[1])
        else:
            # No figure: the rejected prompt was at least as large as the input budget
            # (else the server would have taken it), and we undercounted by a tenth at least.
            raw = self._measure.raw(self._state.history)
            assumed = max(int(raw * self.calibration.factor * 1.1), self.budget.input_budget + 1)
            self.calibration.jump(assumed, raw)
        events = self._compactor.run(self._state, turn, "server reported overflow",
                                     self._state.last_level + 1)
        if not events:  # past level 3: the server's word outweighs our estimate
            events = [e for e in [self._compactor.emergency(self._state, turn)] if e]
        if not events:
            raise ContextExhausted(self._exhausted_text(self.estimate()))
        return events

    def _exhausted_text(self, estimate: int) -> str:
        return exhausted_text(self.budget.window, estimate, self._measure.schema_tokens,
                              self.transcript_path)

    # ----- knowledge and snapshots ---------------------------------------------------------

    def apply_effect(self, call: ToolCall, result: ToolResult, turn: int
                     ) -> tuple[ToolResult, list[Compacted]]:
        """Carry out a tool's effect; the returned result is not yet added (the agent
        adds it with add_tool_result, as for any tool). The results the engine writes
        carry their kind ("thought", "note", "summary") for compaction's scoring."""
        effect = result.effect
        if isinstance(effect, ThinkEffect | TodoEffect):
            done = self.knowledge.apply(effect, turn)
            kind = "thought" if isinstance(effect, ThinkEffect) else "note"
            return replace(done, meta={**done.meta, "kind": kind}), []
        if not isinstance(effect, SnapshotEffect):
            return result, []
        outcome = self._restorer.effect(self._state, effect, turn)
        is_error = isinstance(outcome, Refused) and outcome.why != "empty"
        events = [outcome.event] if isinstance(outcome, Restored) else []
        return ToolResult(snapshot.for_model(outcome), is_error=is_error,
                          meta={"kind": "summary", "summary": snapshot.for_person(outcome)}), events

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
        return self._restorer.by_user(self._state, self._recapper(), force, turn)

    def todos(self) -> list[tuple[int, str, bool]]:
        """(id, text, done) of every todo item, for /todo."""
        return self.knowledge.todos()

    # ----- proactive checkpoints -----------------------------------------------------------

    def _checkpoint_recap(self, messages: Sequence[Message]) -> str | None:
        recapper = self._recapper()
        return recapper.recap(messages, None) if recapper else None

    def _proactive(self, turn: int) -> list[Checkpointed]:
        if self._checkpoints is None:
            return []
        return self._checkpoints.step(turn, self._state.history.messages())

    # ----- for the REPL ------------------------------------------------------------------------

    def usage(self) -> ContextUsage:
        """Calibrated tokens per part, the budget's figures and the compactions' cost."""
        def tokens(messages: Sequence[Message]) -> int:
            return self.calibration.apply(sum(self.counter.message(m) for m in messages))

        by_role = {role: tokens([m for m in self.history if m.role == role])
                   for role in ("user", "assistant", "tool")}
        pin = self._state.history.pinned
        budget = self.budget
        return ContextUsage(
            system=tokens([self._view.system]),
            tools=self.calibration.apply(self._measure.schema_tokens),
            pinned=tokens([pin]) if pin else 0, user=by_role["user"],
            assistant=by_role["assistant"], tool_results=by_role["tool"], used=self.estimate(),
            window=budget.window, input_budget=budget.input_budget,
            output_reserve=budget.output_reserve, trigger=budget.trigger, target=budget.target,
            compactions=self._state.compactions, reprocessed=self._state.reprocessed)

    def set_tool_schemas(self, schemas: Sequence[Mapping[str, Any]]) -> int:
        """The tool list changed (MCP servers settled, /mcp, /plan). The schemas are counted from
        now on; since they come first in the prompt, the next request makes the server
        compute the whole prompt again: returns those tokens (0 before the first request)
        and adds them to the re-processing count that /context shows, once however often
        the list changes before that request."""
        self._schemas = tuple(schemas)
        self._measure.set_schemas(self._schemas)
        self._exactly = None  # the server's own count covered the old schemas
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
        self._ledger, history = rebuild(state.records, state.history,
                                        lambda: Ledger.for_budget(self.budget.input_budget),
                                        self.counter.message)
        self.knowledge.reload()
        history = replace(history, recap=state.recap)
        if state.rewritten:
            history = replace(history, pinned=self._render(history))
        self._state.history = history
        self.session_id, self.transcript_path = path.stem, path
        if self._transcript:
            self._transcript.close()
        self._transcript = self._open_transcript(path, resume=True)
        return len(state.history)
