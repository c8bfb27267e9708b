"""Rebuilding the harness's own facts from a transcript when a session is resumed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from swival.context.compaction import ResultInfo
from swival.context.ledger import Ledger
from swival.context.types import result_info
from swival.messages import Message, ToolCall, ToolResult


def rebuild(
    records: Sequence[Mapping[str, Any]], history: Sequence[Message],
    new_ledger: Callable[[], Ledger] = Ledger,
) -> tuple[Ledger, list[tuple[Message, ResultInfo]]]:
    """The ledger as the recorded session left it (replaying every message since the
    last /clear, into ledgers made by `new_ledger`), and the result facts for the tool
    messages of `history`."""
    ledger = new_ledger()
    calls: dict[str, ToolCall] = {}
    metas: dict[str, Mapping[str, Any]] = {}
    for record in records:
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
            result = ToolResult(message.content, bool(meta.get("is_error")), meta)
            ledger.record_result(calls[message.tool_call_id], result)
    infos = []
    for message in history:
        call = calls.get(message.tool_call_id or "")
        if message.role == "tool" and call is not None:
            meta = metas.get(call.id, {})
            infos.append((message, result_info(call, ToolResult("", bool(meta.get("is_error")),
                                                                meta))))
    return ledger, infos
