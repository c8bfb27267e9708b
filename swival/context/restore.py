"""Snapshot operations on the engine's state: save, cancel, and restore — collapsing
the scope (snapshot.py) into a summary, from the model's call or, for the REPL's
/restore, from the summarizer. The summary is pinned; the collapsed part only points
at it, so it is not paid for twice. Outcomes are typed (snapshot.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from swival.context import passes, snapshot
from swival.context.compactor import Compactor, State
from swival.context.history import History
from swival.context.knowledge import Knowledge
from swival.context.snapshot import Refused, Restored
from swival.context.summarize import Recapper
from swival.effects import SnapshotEffect, ThinkEffect, TodoEffect
from swival.events import Compacted
from swival.messages import Message, ToolResult


class Restorer:
    def __init__(self, compactor: Compactor, knowledge: Knowledge,
                 render: Callable[[History], Message | None]) -> None:
        self.compactor, self.knowledge, self.render = compactor, knowledge, render

    def save(self, state: State, label: str | None) -> snapshot.Saved:
        """A checkpoint after the current turn."""
        state.scope, saved = snapshot.save(state.scope, label, len(state.history.turns))
        return saved

    def cancel(self, state: State) -> snapshot.Cancelled:
        state.scope, cancelled = snapshot.cancel(state.scope)
        return cancelled

    def apply(self, state: State, result: ToolResult, turn: int
              ) -> tuple[ToolResult, list[Compacted]]:
        """Carry out the effect `result` carries: think and todo go to the knowledge
        store, a snapshot to the state. The result the model gets carries its kind
        ("thought", "note", "summary") for compaction's scoring."""
        effect = result.effect
        if isinstance(effect, ThinkEffect | TodoEffect):
            done = self.knowledge.apply(effect, turn)
            kind = "thought" if isinstance(effect, ThinkEffect) else "note"
            return replace(done, meta={**done.meta, "kind": kind}), []
        if not isinstance(effect, SnapshotEffect):
            return result, []
        outcome = self.effect(state, effect, turn)
        is_error = isinstance(outcome, Refused) and outcome.why != "empty"
        events = [outcome.event] if isinstance(outcome, Restored) else []
        meta = {"kind": "summary", "summary": snapshot.for_person(outcome)}
        return ToolResult(snapshot.for_model(outcome), is_error=is_error, meta=meta), events

    def effect(self, state: State, effect: SnapshotEffect, turn: int) -> snapshot.Outcome:
        """What the model's snapshot call asks for."""
        if effect.action == "save":
            return self.save(state, effect.label)
        if effect.action == "cancel":
            return self.cancel(state)
        if effect.action == "status":
            return snapshot.status(state.scope, state.history)
        if not (effect.summary or "").strip():
            return Refused("no summary")
        refusal = self._dirty(state, state.scope.start(state.history), effect.force)
        if refusal:
            return refusal
        return self.collapse(state, effect.label, effect.summary or "",
                             ("snapshot restore", turn), inflight=True)

    def by_user(self, state: State, recapper: Recapper | None, force: bool,
                turn: int) -> Refused | Restored:
        """/restore: the summarizer writes the summary of the scope."""
        if recapper is None:
            return Refused("no summarizer")
        start = state.scope.start(state.history)
        gone = [m for t in state.history.turns[start:] for m in t.messages]
        if not gone:
            return Refused("empty")
        refusal = self._dirty(state, start, force)
        if refusal:
            return refusal
        summary = recapper.recap(gone, None)
        if not summary:
            return Refused("summary failed")
        return self.collapse(state, None, summary, ("/restore", turn), inflight=False)

    def _dirty(self, state: State, start: int, force: bool) -> Refused | None:
        names = snapshot.changes(state.history, start)
        if names and not force:
            return Refused("dirty", names, snapshot.since_words(state.scope))
        return None

    def collapse(self, state: State, label: str | None, summary: str, why: tuple[str, int],
                 inflight: bool) -> Restored:
        """Collapse the scope into `summary` (`inflight`: the last turn asked for it); the
        caller has checked that it may."""
        start = state.scope.start(state.history)
        stored = self.knowledge.add_snapshot_summary(label, summary, why[1])
        pointer = (f"[Snapshot summary{f' {label!r}' if label else ''} is pinned at the top "
                   "of the conversation.]")
        history, collapsed = passes.collapse(state.history, start,
                                             pointer if stored else summary,
                                             self.compactor.measure.counter.message, inflight)
        history = replace(history, pinned=self.render(history))
        event = self.compactor.commit(state, history, 0, why)
        state.reprocessed += event.reprocessed
        state.last_level = 0
        state.scope = replace(state.scope, checkpoint=None, label=None,
                              boundary=len(history.turns), lost=False)
        return Restored(label, collapsed, event)
