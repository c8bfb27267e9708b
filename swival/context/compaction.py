"""Compaction passes over a history (pure functions: history in, history out).

A *turn* is an assistant message with the tool results that answer it, or a lone
message (a user request). Passes work on whole turns, so a tool call and its result
are never separated.

    level 1  shrink: old tool results become one-line records (command output keeps
             its head, tail and error lines), long call arguments are cut; the last
             `keep` turns stay whole
    level 2  drop: score the older assistant turns, drop the worse half (more when
             that does not free enough), return them for a recap; user messages
             are never dropped here
    level 3  nuclear: keep only the last `keep` turns
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from swival.context.errorlines import error_lines
from swival.messages import Message, ToolCall

SHRINK_MIN_CHARS = 300  # results shorter than this are already as small as a record
COMMAND_KEEP = 200  # a shrunk command keeps its first and last 200 characters
ARGUMENT_MAX = 400  # longer string arguments of old calls are cut
WRITE_TOOLS = frozenset({"write_file", "edit_file", "apply_patch", "delete_file", "move_file"})
COMMAND_TOOLS = frozenset({"run_command", "bash", "shell"})


@dataclass(frozen=True)
class ResultInfo:
    """What the harness knows about one stored tool result (from ToolResult.meta)."""

    name: str
    kind: str = "generic"
    path: str | None = None
    lines: int | None = None
    pattern: str | None = None
    matches: int | None = None
    is_error: bool = False
    wrote: bool = False


Lookup = Callable[[Message], ResultInfo | None]


def turn_spans(history: Sequence[Message]) -> list[tuple[int, int]]:
    """[start, end) of each turn, in order."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(history)
    while i < n:
        j = i + 1
        if history[i].role == "assistant":
            while j < n and history[j].role == "tool":
                j += 1
        spans.append((i, j))
        i = j
    return spans


def _head_tail(text: str, keep: int, errors: bool = False) -> str:
    """About the first and last `keep` characters, cut at line ends when one is near;
    with `errors`, also the error lines (errorlines.py) not shown whole in either
    part, so a shrunk test run still says what failed."""
    if len(text) <= 2 * keep + 60:
        return text
    head = text.rfind("\n", 0, keep)
    head = head if head >= keep // 2 else keep
    tail = text.find("\n", len(text) - keep) + 1
    tail = tail if 0 < tail <= len(text) - keep // 2 else len(text) - keep
    middle = text[head:tail]
    shown = (text[:head], text[tail:])
    found = [ln for ln in error_lines(text) if ln.removesuffix("...") not in shown[0]
             and ln.removesuffix("...") not in shown[1] and ln[:40] in text] if errors else []
    note = "; its error lines follow" if found else ""
    kept = "".join(f"{line}\n" for line in found)
    return (f"{text[:head]}\n[... {len(middle)} characters compacted{note} ...]\n"
            f"{kept}{text[tail:]}")


def result_record(message: Message, info: ResultInfo | None) -> str:
    """The one-line (or head+tail) stand-in for an old tool result."""
    text = message.content
    name = info.name if info else (message.name or "tool")
    kind = info.kind if info else "generic"
    if kind == "command" or name in COMMAND_TOOLS or (info and info.is_error):
        return _head_tail(text, COMMAND_KEEP, errors=True)
    lines = info.lines if info and info.lines is not None else text.count("\n") + 1
    path = info.path if info and info.path else None
    if kind == "file":
        return f"[{name}: {path or 'file'}, {lines} lines — content compacted]"
    if kind == "matches":
        pattern = f"'{info.pattern}'" if info and info.pattern else "pattern"
        found = info.matches if info and info.matches is not None else lines
        return f"[{name}: {pattern} in {path or '.'}, ~{found} matches — compacted]"
    where = f" {path}," if path else ""
    return f"[{name}:{where} {len(text)} characters — content compacted]"


def _shrink_call(call: ToolCall) -> ToolCall:
    long = {k for k, v in call.arguments.items() if isinstance(v, str) and len(v) > ARGUMENT_MAX}
    if not long:
        return call
    args = {
        k: (_head_tail(v, ARGUMENT_MAX // 2) if k in long else v)
        for k, v in call.arguments.items()
    }
    return replace(call, arguments=args)


def _old_end(spans: Sequence[tuple[int, int]], keep: int, length: int) -> int:
    """Where the `keep` most recent turns start (everything before is old)."""
    if keep == 0:
        return length  # all of it is old (spans[-0] would mean the first turn)
    return spans[-keep][0] if len(spans) > keep else 0


def shrink(history: Sequence[Message], lookup: Lookup, keep: int = 2) -> list[Message]:
    """Level 1. Messages that change are replaced by new objects; others are reused."""
    spans = turn_spans(history)
    old_end = _old_end(spans, keep, len(history))
    out: list[Message] = []
    for index, message in enumerate(history):
        if index >= old_end:
            out.append(message)
        elif message.role == "tool" and len(message.content) > SHRINK_MIN_CHARS:
            record = result_record(message, lookup(message))
            out.append(replace(message, content=record) if record != message.content
                       else message)
        elif message.role == "assistant" and message.tool_calls:
            calls = tuple(_shrink_call(c) for c in message.tool_calls)
            changed = any(a is not b for a, b in zip(calls, message.tool_calls, strict=True))
            out.append(replace(message, tool_calls=calls) if changed else message)
        else:
            out.append(message)
    return out


def score_turn(turn: Sequence[Message], lookup: Lookup) -> int:
    """Importance: writes/edits +5, snapshot recaps +5, errors +3, thinking +2."""
    score = 1
    for message in turn:
        for call in message.tool_calls:
            if call.name in WRITE_TOOLS or call.name == "snapshot":
                score += 5
            elif call.name == "think":
                score += 2
        if message.role == "tool":
            info = lookup(message)
            if info and info.wrote:
                score += 5
            if info and info.is_error:
                score += 3
    return score


def drop(
    history: Sequence[Message], lookup: Lookup, keep: int = 2,
    *, free: int = 0, size: Callable[[Message], int] | None = None,
) -> tuple[list[Message], list[Message]]:
    """Level 2: (kept history, dropped messages). Only assistant turns older than the
    last `keep` turns are candidates. The lower-scoring half of them is dropped (ties
    drop the older turn first); then, while the dropped turns weigh less than `free`
    (by `size`), the next lowest-scoring ones too, so the level frees what it must."""
    spans = turn_spans(history)
    protected = set(spans[-keep:]) if keep else set()
    candidates = [s for s in spans if s not in protected and history[s[0]].role != "user"]
    ranked = sorted(candidates, key=lambda s: (score_turn(history[s[0]:s[1]], lookup), s[0]))
    count = (len(candidates) + 1) // 2
    if size is not None:
        freed = sum(size(m) for s in ranked[:count] for m in history[s[0]:s[1]])
        while count < len(ranked) and freed < free:
            span = ranked[count]
            freed += sum(size(m) for m in history[span[0]:span[1]])
            count += 1
    dropped_spans = set(ranked[:count])
    kept: list[Message] = []
    dropped: list[Message] = []
    for span in spans:
        target = dropped if span in dropped_spans else kept
        target.extend(history[span[0]:span[1]])
    return kept, dropped


def nuclear(history: Sequence[Message], keep: int = 2) -> tuple[list[Message], list[Message]]:
    """Level 3: (the last `keep` turns, everything before them)."""
    spans = turn_spans(history)
    if len(spans) <= keep:
        return list(history), []
    cut = spans[-keep][0] if keep else len(history)
    return list(history[cut:]), list(history[:cut])
