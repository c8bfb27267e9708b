"""The context engine: owns the history the model sees and keeps it inside the window.

The agent calls, in order, for every turn:

    add_user(text)                    a request (or add nothing on a follow-up call)
    prepare(turn) -> Prepared         budget gate; exactly what to send
    record_usage(usage, prepared)     calibration from the server's figure
    add_assistant(message)
    add_tool_result(call, result, read_only=...)   per call (apply_effect first for effects)
    after_tool_batch(turn)            tail notes, budget gate after the results
    end_turn(turn)                    between user turns (proactive summaries)

and `on_overflow(error, turn)` when the server rejects a prompt anyway.

Prefix stability: between rewrites, history is append-only, the system prompt never
changes, and the pinned block (ledger + knowledge + recap, right after the system
prompt) exists only after a rewrite and is re-rendered only then. Reminders due now
(Knowledge.tail_notes) are appended to the newest *unsent* message (the last tool
result of the batch), so every request extends the previous one byte for byte.

The parts: core.py (state, the request as it stands, rewrites and the pinned block),
levels.py (the gate and compaction levels), restore.py (tool effects and snapshots);
this module adds the agent's call API on top.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from swival.context import caps
from swival.context.budget import OUTPUT_FLOOR
from swival.context.calibration import Reading
from swival.context.levels import Compacting
from swival.context.protocols import KnowledgeLike
from swival.context.restore import SnapshotOps
from swival.context.resume import rebuild
from swival.context.summarize import Summarizer
from swival.context.transcript import replay
from swival.context.types import (
    ContextSettings,
    EngineState,
    Extras,
    Prepared,
    result_info,
    tool_meta,
)
from swival.errors import ContextExhausted, ContextOverflowError
from swival.events import Compacted
from swival.messages import Message, ToolCall, ToolResult, Usage

__all__ = ["ContextEngine", "ContextSettings", "Extras", "KnowledgeLike", "Prepared",
           "Summarizer"]

USER_SHARE = 0.5  # a pasted request may take at most this share of the input budget
PROACTIVE_EVERY = 10


class ContextEngine(SnapshotOps, Compacting):
    """See the module docstring for the call order and the guarantees. Constructed as
    ContextEngine(settings, system_prompt, tool_schemas, *, knowledge, state_dir,
    summarize=None, extras=None) (see core.EngineCore)."""

    # ----- appending -----------------------------------------------------------------------

    def add_user(self, text: str) -> None:
        """Append a request. One too big for the window is cut to a preview and saved."""
        self._ledger.record_user(text)
        limit = int(self.budget.input_budget * USER_SHARE)
        content, _ = caps.cap_result(text, {"kind": "generic"}, limit, self.counter.text,
                                     self._spill("request"))
        if self._state.pending_notes:
            content += "\n\n" + "\n".join(self._state.pending_notes)
            self._state.pending_notes = []
        self._append(Message(role="user", content=content))

    def add_assistant(self, message: Message) -> None:
        self._state.batch = []
        self._append(message)

    def add_note(self, text: str) -> None:
        """A note from the harness to the model, sent as a user message; unlike a
        request, the ledger does not record it."""
        if self._state.pending_notes:
            text += "\n\n" + "\n".join(self._state.pending_notes)
            self._state.pending_notes = []
        self._append(Message(role="user", content=text))

    def add_tool_result(self, call: ToolCall, result: ToolResult, *, read_only: bool) -> ToolResult:
        """Cap, record and append one result; return it as the model will see it."""
        limit = max(64, int(self.budget.input_budget * self.settings.tool_result_share))
        content, path = caps.cap_result(result.content, result.meta, limit, self.counter.text,
                                        self._spill(call.name))
        final = result if path is None and content == result.content else replace(
            result, content=content,
            meta={**result.meta, **({"spill_path": str(path)} if path else {})},
        )
        message = Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
        self._infos[message] = result_info(call, result)
        self._ledger.record_result(call, result)
        self.scope.note_tool(call.name, read_only)
        self._state.batch.append((call.name, read_only))
        self._append(message, tool_meta(final))
        return final

    def after_tool_batch(self, turn: int) -> list[Compacted]:
        """Tell knowledge about the batch, deliver due notes at the tail, run the gate."""
        names = [name for name, _ in self._state.batch]
        if names:
            self.knowledge.observe_batch(turn, names, all(ro for _, ro in self._state.batch))
        self._state.batch = []
        notes = self.knowledge.tail_notes(turn)
        if notes:
            self._attach_notes(notes)
        self._proactive(turn)
        return self._gate(turn, "after tool results")

    def _attach_notes(self, notes: list[str]) -> None:
        if len(self._history) > self._state.sent_len and self._history[-1].role == "tool":
            last = self._history[-1]
            amended = replace(last, content=last.content + "\n\n" + "\n".join(notes))
            info = self._infos.get(last)
            if info:
                self._infos[amended] = info
            self._history[-1] = amended
            if self._transcript:
                self._transcript.amend(amended)
        else:  # nothing unsent to carry them: they ride on the next user message
            self._state.pending_notes.extend(notes)

    # ----- the gate ------------------------------------------------------------------------

    def prepare(self, turn: int) -> Prepared:
        """Compact if needed and return the request. Raises ContextExhausted (exit 5)
        when even the deepest compaction leaves too little room for a reply."""
        events = self._gate(turn, "before model call")
        raw = self._raw()
        estimate = self.calibration.apply(raw)
        reply = self.budget.reply_tokens(estimate)
        if reply < min(OUTPUT_FLOOR, self.budget.max_output_tokens):
            raise ContextExhausted(self._exhausted_text(estimate))
        self._state.sent_len = len(self._history)
        prepared = Prepared(tuple(self.messages()), reply, estimate, tuple(events),
                            room_limited=reply < self.budget.max_output_tokens)
        self._last_sent = (prepared, raw)
        return prepared

    def make_room(self, turn: int) -> list[Compacted]:
        """A reply ran out of room in the window: compact down to the target when the
        prompt is above it (nothing to gain otherwise; then [])."""
        if self.estimate() <= self.budget.target:
            return []
        return self._compact_down(turn, "reply cut short by the window",
                                  self._state.last_level + 1)

    # ----- calibration and overflow ----------------------------------------------------------

    def record_usage(self, usage: Usage, prepared: Prepared) -> ContextOverflowError | None:
        """Fold the server's prompt size for `prepared` into the calibration (see
        calibration.py for which figures count and how). Returns a `truncated` overflow,
        carrying the window the server really runs, when the figure shows the server
        silently cut the prompt: the reply was written without part of the prompt, so the
        agent hands it to `on_overflow` and asks again."""
        if self._last_sent is None or self._last_sent[0] is not prepared:
            return None
        complete = self.settings.counts_include_cache or usage.cached_tokens is not None
        reading = Reading(usage.prompt_tokens, self._last_sent[1], complete)
        window = self.calibration.truncated_window(reading, self.budget.window)
        if window is not None:
            return ContextOverflowError(
                f"The server counted {usage.prompt_tokens} prompt tokens for a prompt of about "
                f"{prepared.estimated_tokens}: it cut the prompt to fit a window of about "
                f"{window} tokens.", kind="truncated", prompt_tokens=usage.prompt_tokens,
                window=window)
        self.calibration.observe(reading)
        return None

    def on_overflow(self, error: ContextOverflowError, turn: int) -> list[Compacted]:
        """The server rejected (or cut) the last prompt: adopt its figures, compact one
        level deeper than last time, and let the agent retry. ContextExhausted when
        there is nothing left to compact."""
        learned = False
        if error.window is not None and error.window < self.budget.window:
            self.budget = replace(self.budget, window=error.window)
            learned = True
        if error.kind == "truncated" and learned:
            pass  # the count is what the server kept, not the prompt: the window is the lesson
        elif error.prompt_tokens and self._last_sent is not None:
            self.calibration.jump(error.prompt_tokens, self._last_sent[1])
        else:
            # No figure: the rejected prompt was at least as large as the input budget
            # (else the server would have taken it), and we undercounted by a tenth at least.
            raw = self._raw()
            assumed = max(int(raw * self.calibration.factor * 1.1), self.budget.input_budget + 1)
            self.calibration.jump(assumed, raw)
        events = self._compact_down(turn, "server reported overflow", self._state.last_level + 1)
        if not events:
            raise ContextExhausted(self._exhausted_text(self.estimate()))
        return events

    # ----- between turns and on request ----------------------------------------------------

    def end_turn(self, turn: int) -> list[Compacted]:
        """Between user requests: the proactive checkpoint, if one is due."""
        self._proactive(turn)
        return []

    def _proactive(self, turn: int) -> None:
        """Every PROACTIVE_EVERY model calls (when enabled), summarize the new part of the
        history into a checkpoint and consolidate the store. `turn` counts model calls
        over the whole session, so checkpoints also happen inside one long request."""
        state = self._state
        if not (self.settings.proactive_summaries and self.summarize):
            return
        if turn - state.checkpoint_turn < PROACTIVE_EVERY:
            return
        fresh = self._history[state.checkpoint_index:]
        state.checkpoint_turn = turn
        if not fresh:
            return
        text = self._recapper().recap(fresh, None)
        if text:
            self.knowledge.add_checkpoint(text, turn)
            state.checkpoint_index = len(self._history)
        oldest = self.knowledge.needs_consolidation()
        if oldest:
            merged = self._recapper().recap(
                [Message(role="user", content=t) for t in oldest], None)
            if merged:
                self.knowledge.replace_oldest(merged, len(oldest))

    def compact(self, level: int, reason: str, turn: int) -> Compacted | None:
        """/compact (level 1) and /compact --drop (levels 1 then 2): one event with the
        deepest level that changed something, or None when nothing could be freed."""
        before = self.estimate()
        done = [e for e in (self._run_level(n, reason, turn) for n in range(1, level + 1)) if e]
        if not done:
            return None
        self._state.last_level = done[-1].level
        return Compacted(done[-1].level, reason, before, self.estimate(), turn)

    def usage_breakdown(self) -> dict[str, int]:
        """Calibrated tokens per part, plus the budget's figures (for /context)."""
        def tokens(messages: Sequence[Message]) -> int:
            return self.calibration.apply(sum(self.counter.message(m) for m in messages))

        by_role = {role: tokens([m for m in self._history if m.role == role])
                   for role in ("user", "assistant", "tool")}
        used = self.estimate()
        return {
            "system": tokens([self._system]),
            "tools": self.calibration.apply(self._schema_tokens),
            "pinned": tokens([self._pinned]) if self._pinned else 0,
            "user": by_role["user"],
            "assistant": by_role["assistant"],
            "tool_results": by_role["tool"],
            "used": used,
            "free": max(0, self.budget.input_budget - used),
            "window": self.budget.window,
            "input_budget": self.budget.input_budget,
            "output_reserve": self.budget.output_reserve,
            "trigger": self.budget.trigger,
            "target": self.budget.target,
        }

    def clear(self) -> None:
        """/clear: forget the conversation, ledger, knowledge and snapshot state."""
        self._history = []
        self._pinned = None
        self._ledger = self._new_ledger()
        self._state = EngineState()
        self.knowledge.clear()
        self.scope.reset()
        if self._transcript:
            self._transcript.clear()

    # ----- resume --------------------------------------------------------------------------

    def load_transcript(self, path: Path) -> int:
        """Continue the session recorded in `path` (--continue / --resume): rebuild the
        history, recap, ledger and result facts, reload knowledge, and keep appending
        to the same file. Returns the number of messages restored."""
        state = replay(path)
        self._ledger, infos = rebuild(state.records, state.history, self._new_ledger)
        for message, info in infos:
            self._infos[message] = info
        self.knowledge.reload()
        self._history = list(state.history)
        self._state = EngineState(recap=state.recap, appends=len(self._history))
        self._pinned = self._render_pinned() if state.rewritten else None
        self.session_id = path.stem
        self.transcript_path = path
        if self._transcript:
            self._transcript.close()
        self._transcript = self._open_transcript(path, resume=True)
        return len(self._history)
