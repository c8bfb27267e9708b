"""Rebuilding the harness's own facts from a transcript when a session is resumed, and
what the transcript keeps about each tool result to make that possible."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from swival.context.history import Count, Facts, History
from swival.context.ledger import Ledger
from swival.context.transcript import Replayed
from swival.messages import Message, ToolCall, ToolResult

META_KEYS = ("kind", "path", "lines", "pattern", "matches", "exit_code", "changed",
             "spill_path", "offset", "command")


def transcript_meta(result: ToolResult, read_only: bool) -> dict[str, Any]:
    """The facts of a result worth keeping in the transcript: enough to rebuild the
    ledger and the result's Facts."""
    meta = {k: result.meta[k] for k in META_KEYS if k in result.meta}
    if result.is_error:
        meta["is_error"] = True
    meta["read_only"] = read_only
    return meta


def rebuild(replayed: Replayed, new_ledger: Callable[[], Ledger], count: Count
            ) -> tuple[Ledger, History]:
    """The ledger as the recorded session left it (every message since the last
    /clear replayed into ledgers made by `new_ledger`), and its history as a History
    with the facts of their tool results and the recap of its last rewrite."""
    ledger = new_ledger()
    calls: dict[str, ToolCall] = {}
    metas: dict[str, Mapping[str, Any]] = {}
    for record in replayed.records:
        kind = record.get("type")
        if kind == "clear":
            ledger = new_ledger()
        if kind != "message":
            continue
        message = Message.from_dict(record["message"])
        calls.update({c.id: c for c in message.tool_calls})
        if message.role == "user":
            ledger.record_user(message.content)
        elif message.role == "tool" and message.tool_call_id in calls:
            meta = record.get("meta") or {}
            metas[message.tool_call_id] = meta
            ledger.record_result(calls[message.tool_call_id],
                                 ToolResult(message.content, bool(meta.get("is_error")), meta))
    history = History()
    for message in replayed.history:
        call = calls.get(message.tool_call_id or "")
        facts = None
        if message.role == "tool" and call is not None:
            meta = metas.get(call.id, {})
            facts = Facts.from_meta(call.name, meta, bool(meta.get("is_error")),
                                    bool(meta.get("read_only", True)))
        history = history.add(message, facts, count)
    return ledger, replace(history, recap=replayed.recap)
