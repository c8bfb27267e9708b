"""Compaction passes: functions from one History to another.

    shrink    level 1: the tool results of turns[start:end] become one-line records
              (command output and errors keep their head, tail and error lines) and
              long call arguments are cut; `start` lets a rewrite begin late in the
              prompt, where it makes the server compute less again
    drop      level 2: score the older assistant turns, drop the lowest-scoring half
              (more when told to free more) and return them for a recap; user turns
              stay
    nuclear   level 3: keep only the last `keep` turns
    collapse  a snapshot restore: the turns from `start` replaced by the model's summary

Passes work on whole turns, so a tool call and its result are never separated, and a
turn a pass leaves alone is returned as the same object, so the prompt up to the first
changed turn stays what the server has cached. What a result is (its kind, path, size,
whether it changed files or failed) comes from its Facts, never from the tool's name.
"""

from __future__ import annotations

from dataclasses import replace

from swival.context.errorlines import error_lines
from swival.context.history import Count, Facts, History, Turn
from swival.messages import Message, ToolCall

SHRINK_MIN_CHARS = 300  # results shorter than this are already as small as a record
COMMAND_KEEP = 200  # a shrunk command keeps its first and last 200 characters
ARGUMENT_MAX = 400  # longer string arguments of old calls are cut
COMPACTED = " characters compacted"  # marks text already cut: never cut twice
SUMMARY_HEADER = ("[Snapshot summary: {count} earlier messages were collapsed into this "
                  "summary of my findings]\n")


def _head_tail(text: str, keep: int, errors: bool = False) -> str:
    """About the first and last `keep` characters, cut at line ends when one is near;
    with `errors`, also the error lines (errorlines.py) not shown whole in either
    part, so a shrunk test run still says what failed."""
    if len(text) <= 2 * keep + 60 or COMPACTED in text:
        return text
    head = text.rfind("\n", 0, keep)
    head = head if head >= keep // 2 else keep
    tail = text.find("\n", len(text) - keep) + 1
    tail = tail if 0 < tail <= len(text) - keep // 2 else len(text) - keep
    shown = (text[:head], text[tail:])
    found = [ln for ln in error_lines(text) if ln.removesuffix("...") not in shown[0]
             and ln.removesuffix("...") not in shown[1] and ln[:40] in text] if errors else []
    note = "; its error lines follow" if found else ""
    kept = "".join(f"{line}\n" for line in found)
    return (f"{shown[0]}\n[... {tail - head}{COMPACTED}{note} ...]\n{kept}{shown[1]}")


def record(message: Message, facts: Facts | None) -> str:
    """The stand-in for an old tool result: one line, or head and tail for commands
    and failures."""
    text = message.content
    name = facts.tool if facts else (message.name or "tool")
    kind = facts.kind if facts else "generic"
    if kind == "command" or (facts and facts.is_error):
        return _head_tail(text, COMMAND_KEEP, errors=True)
    lines = facts.lines if facts and facts.lines is not None else text.count("\n") + 1
    path = facts.path if facts and facts.path else None
    if kind == "file":
        return f"[{name}: {path or 'file'}, {lines} lines — content compacted]"
    if kind == "matches":
        pattern = f"'{facts.pattern}'" if facts and facts.pattern else "pattern"
        found = facts.matches if facts and facts.matches is not None else lines
        return f"[{name}: {pattern} in {path or '.'}, ~{found} matches — compacted]"
    where = f" {path}," if path else ""
    return f"[{name}:{where} {len(text)} characters — content compacted]"


def _shrink_call(call: ToolCall) -> ToolCall:
    long = {k for k, v in call.arguments.items() if isinstance(v, str) and len(v) > ARGUMENT_MAX}
    if not long:
        return call
    args = {k: (_head_tail(v, ARGUMENT_MAX // 2) if k in long else v)
            for k, v in call.arguments.items()}
    return replace(call, arguments=args)


def _shrink_message(message: Message, facts: Facts | None) -> Message:
    if message.role == "tool" and len(message.content) > SHRINK_MIN_CHARS:
        text = record(message, facts)
        return message if text == message.content else replace(message, content=text)
    if message.role == "assistant" and message.tool_calls:
        calls = tuple(_shrink_call(c) for c in message.tool_calls)
        if any(a is not b for a, b in zip(calls, message.tool_calls, strict=True)):
            return replace(message, tool_calls=calls)
    return message


def shrunk(turn: Turn, count: Count) -> Turn:
    """The level-1 form of one turn (the same object when nothing would change)."""
    messages = tuple(_shrink_message(m, f) for m, f in zip(turn.messages, turn.facts,
                                                              strict=True))
    if all(a is b for a, b in zip(messages, turn.messages, strict=True)):
        return turn
    return Turn.of(messages, turn.facts, count)


def old_end(history: History, keep: int) -> int:
    """Index of the first of the `keep` most recent turns (all older ones are old)."""
    return max(0, len(history.turns) - keep)


def shrink(history: History, keep: int, count: Count, start: int = 0) -> History:
    """Level 1 over the old turns from `start` on; the last `keep` turns stay whole."""
    end = old_end(history, keep)
    turns = history.turns
    return history.with_turns(turns[:start] + tuple(shrunk(t, count) for t in turns[start:end])
                              + turns[end:])


def score(turn: Turn) -> int:
    """Importance: a changed file or a snapshot summary +5, an error +3, a thought +2."""
    value = 1
    for facts in turn.facts:
        if facts is None:
            continue
        if facts.changed or facts.kind == "summary":
            value += 5
        elif facts.kind == "thought":
            value += 2
        if facts.is_error:
            value += 3
    return value


def drop(history: History, keep: int, free: int = 0) -> tuple[History, tuple[Message, ...]]:
    """Level 2: (kept history, dropped messages). Only assistant turns older than the
    last `keep` are candidates. The lower-scoring half of them goes (ties: the older
    first); then, while the dropped turns hold fewer than `free` tokens, the next
    lowest-scoring ones too, so the level frees what it must."""
    turns = history.turns
    candidates = [i for i in range(old_end(history, keep)) if turns[i].head.role != "user"]
    ranked = sorted(candidates, key=lambda i: (score(turns[i]), i))
    count = (len(candidates) + 1) // 2
    freed = sum(turns[i].tokens for i in ranked[:count])
    while count < len(ranked) and freed < free:
        freed += turns[ranked[count]].tokens
        count += 1
    gone = set(ranked[:count])
    kept = tuple(t for i, t in enumerate(turns) if i not in gone)
    dropped = tuple(m for i in sorted(gone) for m in turns[i].messages)
    return history.with_turns(kept), dropped


def nuclear(history: History, keep: int) -> tuple[History, tuple[Message, ...]]:
    """Level 3: (the last `keep` turns, everything before them)."""
    end = old_end(history, keep)
    dropped = tuple(m for t in history.turns[:end] for m in t.messages)
    return history.with_turns(history.turns[end:]), dropped


def collapse(history: History, start: int, summary: str, count: Count,
             inflight: bool) -> tuple[History, int]:
    """Replace turns[start:] — but the last turn when it is `inflight` (the assistant
    turn that asked for the restore) — by `summary`; return the history and how many
    messages went. The user's own messages inside are kept, folded into one turn. The
    summary goes at the top of the in-flight turn's text, or becomes a new assistant
    turn, so roles keep alternating and every call keeps its result."""
    turns = history.turns
    end = len(turns) - 1 if inflight and turns else len(turns)
    gone = turns[start:end]
    if not gone:
        return history, 0
    kept = list(turns[:start])
    user_text = "\n\n".join(t.head.content for t in gone if t.head.role == "user"
                            and t.head.content)
    if user_text:
        if kept and kept[-1].head.role == "user":  # strict templates want roles to alternate
            merged = replace(kept[-1].head, content=kept[-1].head.content + "\n\n" + user_text)
            kept[-1] = Turn.of((merged,), (None,), count)
        else:
            kept.append(Turn.of((Message("user", user_text),), (None,), count))
    removed = sum(len(t.messages) for t in gone)
    header = SUMMARY_HEADER.format(count=removed) + summary.strip()
    if end < len(turns):
        last = turns[end]
        own = last.head.content
        head = replace(last.head, content=header + ("\n\n" + own if own else ""))
        kept.append(Turn.of((head, *last.messages[1:]), last.facts, count))
    else:
        kept.append(Turn.of((Message("assistant", header),), (None,), count))
    return history.with_turns(tuple(kept)), removed
