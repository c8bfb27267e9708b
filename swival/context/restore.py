"""Tool effects on the engine: think/todo go to Knowledge, snapshot save/cancel/status
to the snapshot scope, and snapshot restore collapses the scope into a summary (from
the model's call, or from the summarizer for the REPL's /restore).

A restore asks the scope where it starts *before* asking whether it may run, so the
dirty check judges exactly the messages being collapsed (see the contract in
/work/briefs/context_contract.md).
"""

from __future__ import annotations

from swival.context.core import EngineCore
from swival.effects import SnapshotEffect, ThinkEffect, TodoEffect
from swival.events import Compacted
from swival.messages import ToolCall, ToolResult


class SnapshotOps(EngineCore):
    """apply_effect and the snapshot_* methods of ContextEngine."""

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
        start = self.scope.scope_start(self._history)
        refusal = self.scope.restore_check(effect.force)
        if refusal:
            return ToolResult(refusal, is_error=True), []
        message, event = self._restore(start, effect.label, effect.summary or "",
                                       ("snapshot restore", turn))
        return ToolResult(message), [event]

    def _restore(
        self, start: int, label: str | None, summary: str, why: tuple[str, int]
    ) -> tuple[str, Compacted]:
        """Collapse history[start:] into `summary` (checks already done); `why` is the
        event's (reason, turn)."""
        reason, turn = why
        collapsed = len(self._history) - start
        before = self.estimate()
        stored = self.knowledge.add_snapshot_summary(label, summary, turn)
        # The summary itself is pinned (re-rendered by the rewrite below); the collapsed
        # history only points at it, so it is not paid for twice.
        pointer = (f"[Snapshot summary{f' {label!r}' if label else ''} is pinned at the top "
                   "of the conversation.]")
        new = self._collapse(self._history, start, pointer if stored else summary)
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
        start = self.scope.scope_start(self._history)
        refusal = self.scope.restore_check(force)
        if refusal:
            return refusal, None
        scope = self._history[start:]
        if not scope:
            return "Nothing to collapse since the checkpoint.", None
        summary = self._recapper().recap(scope, None)
        if not summary:
            return "The model could not write a summary; nothing was collapsed.", None
        return self._restore(start, None, summary, ("/restore", turn))
