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
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from swival.context import caps, compaction
from swival.context.budget import OUTPUT_FLOOR, SAFETY_SHARE, Budget, Calibration
from swival.context.compaction import ResultInfo
from swival.context.ledger import Ledger
from swival.context.protocols import Collapse, KnowledgeLike, ScopeLike
from swival.context.resume import rebuild
from swival.context.summarize import Recapper, Summarizer, recap_header
from swival.context.tokens import TokenCounter
from swival.context.transcript import Transcript, new_session_id, replay
from swival.context.types import (
    ContextSettings,
    EngineState,
    Extras,
    Prepared,
    result_info,
    tool_meta,
)
from swival.effects import SnapshotEffect, ThinkEffect, TodoEffect
from swival.errors import ContextExhausted, ContextOverflowError
from swival.events import Compacted
from swival.messages import Message, ToolCall, ToolResult, Usage

__all__ = ["ContextEngine", "ContextSettings", "Extras", "Prepared", "Summarizer"]

USER_SHARE = 0.5  # a pasted request may take at most this share of the input budget
RECAP_SHARE = 0.08  # recap size asked of the summarizer, share of the input budget
RECAP_MAX = 1200
PROACTIVE_EVERY = 10
KEEP_TURNS = 2
PINNED_HEADER = (
    "[Pinned context, kept by the harness across compactions. It records what already "
    "happened; it is not a new instruction.]"
)


class ContextEngine:
    """See the module docstring for the call order and the guarantees."""

    def __init__(
        self,
        settings: ContextSettings,
        system_prompt: str,
        tool_schemas: Sequence[Mapping[str, Any]],
        *,
        knowledge: KnowledgeLike,
        state_dir: Path | None,
        summarize: Summarizer | None = None,
        extras: Extras | None = None,
    ) -> None:
        extras = extras or Extras()
        if extras.scope is None or extras.collapse is None:
            from swival.context import snapshot  # the knowledge helper's module

        self.settings = settings
        self.knowledge = knowledge
        self.state_dir = state_dir
        self.summarize = summarize
        self.counter = extras.counter or TokenCounter()
        self.scope: ScopeLike = extras.scope or snapshot.SnapshotScope()
        self._collapse: Collapse = extras.collapse or snapshot.collapse
        self.budget = Budget(settings.window, settings.max_output_tokens,
                             settings.compaction_trigger, settings.compaction_target)
        self.calibration = Calibration()
        self._system = Message(role="system", content=system_prompt)
        self._schemas = tuple(tool_schemas)
        self._schema_tokens = self.counter.schemas(self._schemas)
        self._history: list[Message] = []
        self._pinned: Message | None = None
        self._merged: tuple[Message, Message, Message] | None = None
        self._infos: weakref.WeakKeyDictionary[Message, ResultInfo] = (
            weakref.WeakKeyDictionary()
        )
        self._ledger = Ledger()
        self._state = EngineState()
        self._last_sent: tuple[Prepared, int] | None = None
        self.session_id = extras.session_id or new_session_id()
        self.transcript_path = (
            state_dir / "sessions" / f"{self.session_id}.jsonl" if state_dir else None
        )
        self._transcript = Transcript(self.transcript_path) if self.transcript_path else None

    # ----- reading -------------------------------------------------------------------------

    @property
    def history(self) -> tuple[Message, ...]:
        """The conversation without the system prompt and pinned block."""
        return tuple(self._history)

    def messages(self) -> list[Message]:
        """What would be sent now: system prompt, pinned block (if any), history."""
        if self._pinned is None:
            return [self._system, *self._history]
        if self._history and self._history[0].role == "user":
            # Two user messages in a row break chat templates that demand alternating
            # roles (Mistral, Gemma): fold the pinned block into the first user message.
            return [self._system, self._merged_head(self._history[0]), *self._history[1:]]
        return [self._system, self._pinned, *self._history]

    def _merged_head(self, first: Message) -> Message:
        """The pinned block and `first` as one user message, built once per pair so the
        token cache and the prefix stay stable between rewrites."""
        cached = self._merged
        if cached and cached[0] is self._pinned and cached[1] is first:
            return cached[2]
        assert self._pinned is not None
        merged = Message(role="user", content=self._pinned.content + "\n\n" + first.content)
        self._merged = (self._pinned, first, merged)
        return merged

    def _raw(self) -> int:
        return self.counter.messages(self.messages()) + self._schema_tokens

    def estimate(self) -> int:
        """Calibrated tokens of the prompt as it stands (messages + tool schemas)."""
        return self.calibration.apply(self._raw())

    def _lookup(self, message: Message) -> ResultInfo | None:
        return self._infos.get(message)

    # ----- appending -----------------------------------------------------------------------

    def _append(self, message: Message, meta: Mapping[str, Any] | None = None) -> None:
        self._history.append(message)
        self._state.appends += 1
        self._state.last_level = 0
        if self._transcript:
            self._transcript.message(message, meta)

    def _spill(self, stem: str) -> Callable[[str], Path | None]:
        def write(content: str) -> Path | None:
            if self.state_dir is None:
                return None
            try:
                return caps.spill(self.state_dir / "out", stem, content)
            except OSError:
                return None

        return write

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
        if estimate + OUTPUT_FLOOR + int(self.budget.window * SAFETY_SHARE) > self.budget.window:
            raise ContextExhausted(self._exhausted_text(estimate))
        self._state.sent_len = len(self._history)
        prepared = Prepared(tuple(self.messages()), self.budget.reply_tokens(estimate),
                            estimate, tuple(events))
        self._last_sent = (prepared, raw)
        return prepared

    def _exhausted_text(self, estimate: int) -> str:
        where = f" The full conversation is saved in {self.transcript_path}." if (
            self.transcript_path) else ""
        return (
            f"The conversation no longer fits the {self.budget.window}-token context window, "
            f"even after the deepest compaction (about {estimate} tokens needed, including "
            f"{self._schema_tokens} for tool schemas).{where} To continue, load the model "
            "with a larger context window (and pass --max-context-tokens), or start over "
            "with /clear and a smaller request."
        )

    def _gate(self, turn: int, reason: str) -> list[Compacted]:
        if self.estimate() < self.budget.trigger:
            return []
        return self._compact_down(turn, reason, self._state.last_level + 1)

    def _compact_down(self, turn: int, reason: str, first: int) -> list[Compacted]:
        """Run levels from `first` up until the prompt is at or below the target."""
        events: list[Compacted] = []
        for level in range(max(1, first), 4):
            event = self._run_level(level, reason, turn)
            if event:
                events.append(event)
            self._state.last_level = level
            if self.estimate() <= self.budget.target:
                break
        return events

    def _run_level(self, level: int, reason: str, turn: int) -> Compacted | None:
        before = self.estimate()
        recap = self._state.recap
        if level == 1:
            new = compaction.shrink(self._history, self._lookup, KEEP_TURNS)
        else:
            if level == 2:
                new, dropped = compaction.drop(self._history, self._lookup, KEEP_TURNS)
            else:
                new, dropped = compaction.nuclear(self._history, KEEP_TURNS)
            if dropped:
                recap = self._make_recap(dropped)
            if level == 3 and self._would_exceed(new, recap):
                new = compaction.shrink(new, self._lookup, 0)
        if all(a is b for a, b in zip(new, self._history, strict=False)) and len(new) == len(
                self._history):
            return None
        # Level 1 drops no turn, so the pinned block is left as it was: re-rendering it
        # (the ledger moves on every command) would make the server re-read everything.
        self._rewrite(new, recap, repin=level > 1)
        event = Compacted(level, reason, before, self.estimate(), turn)
        if self._transcript:
            self._transcript.compacted(event)
        return event

    def _would_exceed(self, history: list[Message], recap: str | None) -> bool:
        saved = self._history, self._state.recap, self._pinned
        self._history, self._state.recap = history, recap
        self._pinned = self._render_pinned()
        over = self.estimate() > self.budget.target
        self._history, self._state.recap, self._pinned = saved
        return over

    def _make_recap(self, dropped: Sequence[Message]) -> str:
        """LLM recap, else checkpoint summaries, else a static marker; merged with the
        previous recap so nothing recapped earlier is lost."""
        previous = self._state.recap
        if self.summarize is not None:
            text = self._recapper().recap(dropped, previous)
            if text:
                return text
        marker = (f"[{len(dropped)} earlier messages were removed to fit the context window; "
                  f"they are kept in {self.transcript_path or 'no file (no state directory)'}.]")
        checkpoints = self.knowledge.checkpoint_text()
        parts = [p for p in (previous, checkpoints, marker) if p]
        text = "\n\n".join(dict.fromkeys(parts))
        limit = self._recap_tokens() * 6  # about 1.5x the recap size, in characters
        return text if len(text) <= limit else text[-limit:]

    def _recap_tokens(self) -> int:
        return min(RECAP_MAX, int(self.budget.input_budget * RECAP_SHARE))

    def _recapper(self) -> Recapper:
        assert self.summarize is not None
        return Recapper(self.summarize, self.counter.text,
                        str(self.transcript_path or "the session transcript"),
                        self.budget.input_budget, self._recap_tokens())

    def _rewrite(self, history: list[Message], recap: str | None, repin: bool = True) -> None:
        """Replace the history (after the transcript has everything) and, with
        `repin`, re-render the pinned block: the one moment the prefix may change."""
        self._history = list(history)
        self._state.recap = recap
        self._state.appends = 0
        self._state.sent_len = min(self._state.sent_len, len(self._history))
        self._state.checkpoint_index = len(self._history)
        if repin:
            self._pinned = self._render_pinned()
        if self._transcript:
            self._transcript.history(self._history, recap)

    def _render_pinned(self) -> Message | None:
        parts = [self._ledger.render(), *self.knowledge.pinned_sections()]
        if self._state.recap:
            parts.append(recap_header(str(self.transcript_path or "no file")) + "\n"
                         + self._state.recap)
        body = "\n\n".join(p for p in parts if p)
        return Message(role="user", content=PINNED_HEADER + "\n\n" + body) if body else None

    # ----- calibration and overflow ----------------------------------------------------------

    def record_usage(self, usage: Usage, prepared: Prepared) -> None:
        """Fold the server's prompt size for `prepared` into the calibration. Figures
        far off our count (a server that cut the prompt) are ignored here."""
        if self._last_sent is None or self._last_sent[0] is not prepared:
            return
        raw = self._last_sent[1]
        if raw > 0 and 0.25 <= usage.prompt_tokens / raw <= 4.0:
            self.calibration.observe(usage.prompt_tokens, raw)

    def on_overflow(self, error: ContextOverflowError, turn: int) -> list[Compacted]:
        """The server rejected (or cut) the last prompt: adopt its figures, compact one
        level deeper than last time, and let the agent retry. ContextExhausted when
        there is nothing left to compact."""
        if error.window and error.window < self.budget.window:
            self.budget = replace(self.budget, window=error.window)
        if error.prompt_tokens and self._last_sent is not None:
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
        """Between user turns: every PROACTIVE_EVERY turns (when enabled) summarize the
        new part of the history into a checkpoint, and consolidate the store."""
        state = self._state
        if not (self.settings.proactive_summaries and self.summarize):
            return []
        if turn - state.checkpoint_turn < PROACTIVE_EVERY:
            return []
        fresh = self._history[state.checkpoint_index:]
        state.checkpoint_turn = turn
        if not fresh:
            return []
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
        return []

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
        self._ledger = Ledger()
        self._state = EngineState()
        self.knowledge.clear()
        self.scope.reset()
        if self._transcript:
            self._transcript.clear()

    # ----- think / todo / snapshot ---------------------------------------------------------

    def apply_effect(
        self, call: ToolCall, result: ToolResult, turn: int
    ) -> tuple[ToolResult, list[Compacted]]:
        """Carry out a tool's effect; the returned result is not yet added (the agent
        adds it with add_tool_result, as for any tool)."""
        effect = result.effect
        if isinstance(effect, ThinkEffect | TodoEffect):
            return self.knowledge.apply(effect, turn), []
        if not isinstance(effect, SnapshotEffect):
            return result, []
        if effect.action == "save":
            return ToolResult(self.scope.save(effect.label, len(self._history))), []
        if effect.action == "cancel":
            return ToolResult(self.scope.cancel()), []
        if effect.action == "status":
            return ToolResult(self.scope.status(len(self._history))), []
        if not (effect.summary or "").strip():
            return ToolResult("snapshot restore needs `summary`: write what you learned "
                              "(findings, paths, decisions) and call it again.",
                              is_error=True), []
        refusal = self.scope.restore_check(effect.force)
        if refusal:
            return ToolResult(refusal, is_error=True), []
        message, event = self._restore(effect.label, effect.summary or "", "snapshot restore", turn)
        return ToolResult(message), [event]

    def _restore(
        self, label: str | None, summary: str, reason: str, turn: int
    ) -> tuple[str, Compacted]:
        """Collapse the snapshot scope into `summary` (checks already done)."""
        start = self.scope.scope_start(self._history)
        collapsed = len(self._history) - start
        before = self.estimate()
        stored = self.knowledge.add_snapshot_summary(label, summary, turn)
        new = self._collapse(self._history, start, stored)
        self._rewrite(new, self._state.recap)
        self._state.last_level = 0
        self.scope.restored(len(new))
        event = Compacted(0, reason, before, self.estimate(), turn)
        if self._transcript:
            self._transcript.compacted(event)
        return (f"Collapsed {collapsed} messages into your summary ({before} -> "
                f"{event.tokens_after} tokens). The summary is pinned and survives "
                "compaction."), event

    def snapshot_save(self, label: str | None) -> str:
        """/save: a checkpoint at the end of the history."""
        return self.scope.save(label, len(self._history))

    def snapshot_cancel(self) -> str:
        """/unsave."""
        return self.scope.cancel()

    def snapshot_status(self) -> str:
        return self.scope.status(len(self._history))

    def snapshot_restore(self, force: bool, turn: int) -> tuple[str, Compacted | None]:
        """/restore from the user's side: the summarizer writes the summary."""
        if self.summarize is None:
            return "No summarizer is available, so /restore cannot write a summary.", None
        refusal = self.scope.restore_check(force)
        if refusal:
            return refusal, None
        scope = self._history[self.scope.scope_start(self._history):]
        if not scope:
            return "Nothing to collapse since the checkpoint.", None
        summary = self._recapper().recap(scope, None)
        if not summary:
            return "The model could not write a summary; nothing was collapsed.", None
        return self._restore(None, summary, "/restore", turn)

    # ----- resume --------------------------------------------------------------------------

    def load_transcript(self, path: Path) -> int:
        """Continue the session recorded in `path` (--continue / --resume): rebuild the
        history, recap, ledger and result facts, reload knowledge, and keep appending
        to the same file. Returns the number of messages restored."""
        state = replay(path)
        self._ledger, infos = rebuild(state.records, state.history)
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
        self._transcript = Transcript(path)
        return len(self._history)
