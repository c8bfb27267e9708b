"""The snapshot scope (where a restore starts, whether it is dirty) and `collapse`,
which replaces that scope by the model's summary.

A scope starts at the checkpoint `save` set, or, without one, after the last user
message or the previous restore, whichever is later. Tools that can change the
workspace (write_file, edit_file, run_command, any tool not marked read-only) make the
scope dirty; a restore then needs force=true so the model cannot summarize away the
record of its own changes by accident. Reads, listings, greps, think, todo and
snapshot itself never dirty it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from swival.messages import Message

READ_TOOLS = frozenset({"read_file", "list_files", "grep", "think", "todo", "snapshot"})
WRITE_TOOLS = frozenset({"write_file", "edit_file", "run_command"})


def dirties(tool_name: str, read_only: bool) -> bool:
    """True when a call of this tool makes the snapshot scope dirty."""
    if tool_name in READ_TOOLS:
        return False
    return tool_name in WRITE_TOOLS or not read_only


def _skip_results(history: Sequence[Message], start: int) -> int:
    """Move `start` past tool results, which belong with the call before them."""
    start = max(0, min(start, len(history)))
    while start < len(history) and history[start].role == "tool":
        start += 1
    return start


class SnapshotScope:
    """Checkpoint, restore boundary and dirty state of one session."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """/clear: no checkpoint, no boundary, nothing dirty."""
        self._checkpoint: int | None = None
        self._label: str | None = None
        self._boundary: int | None = None
        self._dirty: list[str] = []  # dirtying tools since the last save/restore/reset
        self._mutating: set[str] = set()  # tool names seen to dirty the scope
        self._tools_seen = 0
        self._measured: tuple[int, list[str]] | None = None  # (tools_seen, dirty in scope)
        self._lost = False

    def save(self, label: str | None, history_len: int) -> str:
        """Set the checkpoint at the current end of history (replacing any earlier one)."""
        previous = self._label_text() if self._checkpoint is not None else None
        self._checkpoint, self._label, self._lost = history_len, label, False
        self._dirty, self._measured = [], None
        replaced = f" It replaces checkpoint {previous}." if previous else ""
        return (f"Checkpoint {self._label_text()} saved.{replaced} When you have what you "
                "need, call snapshot restore with a summary of your findings.")

    def cancel(self) -> str:
        """Drop the checkpoint without collapsing anything."""
        if self._checkpoint is None:
            return "There is no checkpoint to cancel; nothing changed."
        name = self._label_text()
        self._checkpoint, self._label = None, None
        return f"Checkpoint {name} cancelled; nothing was collapsed."

    def status(self, history_len: int) -> str:
        if self._checkpoint is None:
            lost = (" (the last one was dropped when history was compacted)"
                    if self._lost else "")
            where = "No checkpoint" + lost + "; restore would collapse everything since the "
            head = where + "last user message or previous restore."
        else:
            since = max(0, history_len - self._checkpoint)
            head = f"Checkpoint {self._label_text()}: {since} messages since it."
        if self._dirty:
            return (head + f" Changes since then ({', '.join(self._dirty)}): restore needs "
                    "force=true.")
        return head + " Only reads since then: restore is allowed."

    def note_tool(self, tool_name: str, read_only: bool) -> None:
        """Record one finished tool call; non-read tools make the scope dirty."""
        self._tools_seen += 1
        if dirties(tool_name, read_only):
            self._mutating.add(tool_name)
            if tool_name not in self._dirty:
                self._dirty.append(tool_name)

    def scope_start(self, history: Sequence[Message]) -> int:
        """Index where a restore starts: the checkpoint, else after the last user message
        or the previous restore (the later). Never the middle of a call and its results.
        Also measures which dirtying tools were called inside the scope, which
        `restore_check` then uses instead of the coarser running record."""
        if self._checkpoint is not None:
            start = self._checkpoint
        else:
            users = [i for i, m in enumerate(history) if m.role == "user"]
            start = max(users[-1] + 1 if users else 0, self._boundary or 0)
        start = _skip_results(history, start)
        names: list[str] = []
        for message in history[start:]:
            for call in message.tool_calls:
                dirty = call.name in self._mutating or dirties(call.name, True)
                if dirty and call.name not in names:
                    names.append(call.name)
        self._measured = (self._tools_seen, names)
        return start

    def restore_check(self, force: bool) -> str | None:
        """None when a restore may go ahead, else the refusal asking for force=true.
        Exact when `scope_start` ran after the last tool call; otherwise it counts every
        non-read tool since the last save or restore."""
        fresh = self._measured is not None and self._measured[0] == self._tools_seen
        names = self._measured[1] if fresh and self._measured else self._dirty
        if not names or force:
            return None
        if self._checkpoint is not None:
            since = "since the checkpoint"
        elif fresh:
            since = "in the part to collapse"
        else:
            since = "since the last restore" if self._boundary is not None else "this session"
        return (f"error: the scope has changes ({', '.join(names)} {since}). A restore "
                "would replace the record of them with your summary. If the summary states "
                "what you changed, call snapshot restore again with force=true.")

    def restored(self, new_history_len: int) -> None:
        """After a collapse: the checkpoint is used up and the next scope starts here."""
        self._checkpoint, self._label, self._lost = None, None, False
        self._boundary = new_history_len
        self._dirty, self._measured = [], None

    def rewritten(self) -> None:
        """After compaction dropped messages (levels 2 and 3): stored indexes no longer
        point where they did, so the checkpoint and boundary are dropped; `status` says
        so and a restore falls back to the last user message. Dirty state is kept."""
        self._lost = self._checkpoint is not None
        self._checkpoint, self._label, self._boundary, self._measured = None, None, None, None

    def _label_text(self) -> str:
        return f"'{self._label}'" if self._label else "(unnamed)"


def _inflight(history: Sequence[Message]) -> int | None:
    """Index of the assistant message whose tool calls are being answered now: the last
    message with tool calls when everything after it is a result of those calls."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "tool":
            continue
        if message.role != "assistant" or not message.tool_calls:
            return None
        ids = {call.id for call in message.tool_calls}
        answers = history[index + 1:]
        return index if all(m.tool_call_id in ids for m in answers) else None
    return None


def collapse(history: Sequence[Message], start: int, recap: str) -> list[Message]:
    """Replace history[start:] by `recap`, keeping what must stay.

    Kept: history[:start] (extended past any tool results at `start`), the user's own
    messages inside the range (folded into one), and the in-flight assistant message
    that called snapshot together with the results it already has. The recap becomes
    the text of that assistant message (ahead of its own), so the engine answers the
    snapshot call with a tool result right after it and every call keeps its result.
    Without an in-flight call (a /restore between turns) the recap is a new assistant
    message. When nothing lies between `start` and the in-flight message, the history
    is returned unchanged.
    """
    start = _skip_results(history, start)
    inflight = _inflight(history)
    end = inflight if inflight is not None and inflight >= start else len(history)
    dropped = history[start:end]
    if not dropped:
        return list(history)
    kept = list(history[:start])
    user_text = "\n\n".join(m.content for m in dropped if m.role == "user" and m.content)
    if user_text:
        if kept and kept[-1].role == "user":  # keep roles alternating for strict templates
            kept[-1] = replace(kept[-1], content=kept[-1].content + "\n\n" + user_text)
        else:
            kept.append(Message(role="user", content=user_text))
    header = (f"[Snapshot summary: {len(dropped)} earlier messages were collapsed into this "
              "summary of my findings]\n" + recap.strip())
    tail = list(history[end:])
    if tail:
        own = tail[0].content
        tail[0] = replace(tail[0], content=header + ("\n\n" + own if own else ""))
        return kept + tail
    return [*kept, Message(role="assistant", content=header)]
