"""What scripts read on stdout: the stream-json lines and the report of a run that failed
before it started.

`--output-format stream-json` writes one JSON object per line, flushed as it happens. Each
object has a `type`. The run writes `start` first, then one record per agent event, made by
the table EVENT_RECORDS (event type -> the function that makes its record, or `_unstreamed`);
the one-shot runner writes the final `result`. Streaming a new event type is adding its row
(tests/test_output_formats.py checks that every event type has one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from swival.config import Settings
from swival.errors import SwivalError
from swival.events import (
    Checkpointed,
    Compacted,
    Continued,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    Notice,
    ReplyRestarted,
    SubagentStep,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from swival.messages import ToolResult, clean_text
from swival.providers.factory import shown_url
from swival.redaction import Redactor

Record = dict[str, Any]
Describe = Callable[[ToolResult], str]  # a few words on how a tool call went


def _unstreamed(event: Any, describe: Describe) -> None:
    """Events a script does not need line by line: model calls starting and ending (their
    totals are in `result`), background checkpoints, and the end of the turn (the runner
    writes `result` with everything `--json` reports)."""
    return None


def _tool_result(event: ToolFinished, describe: Describe) -> Record:
    return {"type": "tool_result", "id": event.call.id, "name": event.call.name,
            "ok": not event.result.failed, "summary": describe(event.result),
            "seconds": round(event.seconds, 3)}


def _compaction(event: Compacted, describe: Describe) -> Record:
    return {"type": "compaction", "level": event.level, "reason": event.reason,
            "turn": event.turn, "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after, "reprocessed": event.reprocessed}


def _subagent(event: SubagentStep, describe: Describe) -> Record | None:
    """A subagent's step while the parent's `task` call runs: its start (what it was
    asked), a finished tool call of the child (as `tool_result` has it), or what else it
    reported; none for a call just started."""
    record: Record = {"type": "subagent", "task": event.task,
                      "description": event.description}
    if event.prompt:
        return {**record, "prompt": event.prompt}
    if event.call is not None and event.result is None:
        return None  # the call's record comes when it is over
    if event.call is not None and event.result is not None:
        return {**record, "name": event.call.name, "arguments": dict(event.call.arguments),
                "ok": not event.result.failed, "summary": describe(event.result),
                "seconds": round(event.seconds, 3)}
    return {**record, "level": event.level, "text": event.text}


EVENT_RECORDS: Mapping[type, Callable[[Any, Describe], Record | None]] = {
    TextDelta: lambda e, _: {"type": "text", "text": e.text},
    ToolStarted: lambda e, _: {"type": "tool_call", "id": e.call.id, "name": e.call.name,
                               "arguments": dict(e.call.arguments)},
    ToolFinished: _tool_result,
    Compacted: _compaction,
    ReplyRestarted: lambda e, _: {"type": "retry", "reason": e.reason},
    Continued: lambda e, _: {"type": "continuation", "count": e.count, "limit": e.limit},
    Notice: lambda e, _: {"type": "notice", "level": e.level, "text": e.text},
    SubagentStep: _subagent,
    ModelCallStarted: _unstreamed,
    ModelCallFinished: _unstreamed,
    Checkpointed: _unstreamed,
    TurnFinished: _unstreamed,
}


class JsonLines:
    """Writes records to `out`, one JSON object per line, secrets redacted, each line
    flushed at once so a reader sees it while the run goes on."""

    def __init__(self, out: TextIO, redactor: Redactor, describe: Describe) -> None:
        self.out = out
        self.redactor = redactor
        self.describe = describe
        self._open: dict[str, tuple[str, float]] = {}  # calls started, not yet finished

    def write(self, record: Record) -> None:
        self.out.write(json_line(record, self.redactor) + "\n")
        self.out.flush()

    def event(self, event: Event) -> None:
        """The record of `event`, when its type streams one."""
        if isinstance(event, ToolStarted):
            self._open[event.call.id] = (event.call.name, time.monotonic())
        elif isinstance(event, ToolFinished):
            self._open.pop(event.call.id, None)
        row = EVENT_RECORDS.get(type(event))
        record = row(event, self.describe) if row is not None else None
        if record is not None:
            self.write(record)

    def interrupted(self) -> None:
        """Ctrl-C (or SIGTERM): every call that had started gets its `tool_result`, not
        ok, so each `tool_call` a reader saw is closed before `result`."""
        now = time.monotonic()
        for call_id, (name, started) in self._open.items():
            self.write({"type": "tool_result", "id": call_id, "name": name, "ok": False,
                        "summary": "interrupted", "seconds": round(now - started, 3)})
        self._open.clear()


def failure_report(settings: Settings | None, error: str, exit_code: int) -> Record:
    """The `--json` report (also the stream's `result`) of a run that failed before it
    started: a bad flag or config (`settings` None: they could not be read), an empty
    stdin, a server that does not answer. The counters are zero; `base_url` is the URL
    the run would have used."""
    return {
        "answer": "", "exit_reason": "interrupted" if exit_code in (130, 143) else "error",
        "exit_code": exit_code, "error": error,
        "turns": 0, "tool_calls": 0, "tokens": {"prompt": 0, "completion": 0},
        "compactions": [], "files_changed": [],
        "subagents": {"tasks": 0, "failed": 0, "tokens": {"prompt": 0, "completion": 0}},
        "provider": settings.provider if settings else None,
        "base_url": shown_url(settings) if settings else None,
        "model": settings.model if settings else None,
        "window": settings.max_context_tokens if settings else None,
        "window_source": None, "session_id": None,
        "ignored_project_keys": list(settings.held_back) if settings else [],
        "cost_usd": None,
    }


def print_report(report: Record, output_format: str, redactor: Redactor) -> None:
    """The report on stdout: the `--json` object, or the stream's last line, `result`."""
    if output_format == "stream-json":
        report = {"type": "result", **report}
    print(json_line(report, redactor), flush=True)


def json_line(record: Record, redactor: Redactor) -> str:
    """One JSON object on one line, secrets redacted; a lone surrogate (half a UTF-16
    pair, which a server can send escaped) becomes U+FFFD so the line encodes as UTF-8."""
    return clean_text(json.dumps(redactor.scrub(record), ensure_ascii=False))


def report_failure(settings: Settings | None, error: SwivalError | str, exit_code: int,
                   *, output_format: str, redactor: Redactor) -> int:
    """Print the failure report in `output_format` ("json" or "stream-json"); the exit
    code to leave with."""
    print_report(failure_report(settings, str(error), exit_code), output_format, redactor)
    return exit_code
