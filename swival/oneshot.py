"""One-shot mode: the final answer alone on stdout, progress on stderr, or one JSON object.

Exit codes: 0 done, 1 runtime error or a reply the output limit kept cutting, 2
usage/config, 3 provider unreachable or model missing, 4 turn limit, 5 context exhausted,
130 interrupted, 143 terminated (SIGTERM).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any

from swival.config import Settings, redactor_for
from swival.errors import SwivalError
from swival.events import Compacted, Event, SubagentStep, ToolFinished, TurnFinished
from swival.providers.factory import spent
from swival.render import ProgressPrinter, screen_text, stderr_console
from swival.session import Session
from swival.tools.approval import Answer
from swival.tools.policy import Question

EXIT_FOR_REASON = {"done": 0, "max_turns": 4, "interrupted": 130, "context_exhausted": 5,
                   "output_limit": 1, "error": 1}


@dataclass
class Tally:
    """What --json reports, gathered from the events."""

    compactions: list[dict[str, Any]] = field(default_factory=list)
    files_changed: dict[str, str] = field(default_factory=dict)
    finished: TurnFinished | None = None

    def add(self, event: Event) -> None:
        if isinstance(event, Compacted):
            self.compactions.append(
                {"level": event.level, "reason": event.reason, "turn": event.turn,
                 "tokens_before": event.tokens_before, "tokens_after": event.tokens_after}
            )
        elif isinstance(event, ToolFinished | SubagentStep) and event.result is not None:
            for path, kind in event.result.meta.get("changed", ()):
                if self.files_changed.get(path) != "created":
                    self.files_changed[path] = kind
        elif isinstance(event, TurnFinished):
            self.finished = event


def ask_on_terminal(question: Question) -> Answer:
    """Approval for one-shot runs started from a terminal: asked on stderr, read from stdin.
    Lines are wrapped at the terminal's width between words."""
    lines = [f"swival wants to run: {question.shown}"]
    if question.found:
        lines.append("Needs approval every time: " + "; ".join(question.found) + ".")
    print("\n" + _wrap("\n".join(lines)), file=sys.stderr)
    programs = ", ".join(question.programs)
    return _choose_on_terminal((programs,) if programs else ())[0]


def confirm_on_terminal(action: str, scopes: tuple[str, ...], detail: str) -> str:
    """Any other approval (a fetch, an MCP tool, an edit with its diff as `detail`; see
    swival/tools/approval.py), asked the same way."""
    if detail:
        print("\n" + screen_text(detail).rstrip("\n"), file=sys.stderr)
    print("\n" + _wrap(f"swival asks: {action}?"), file=sys.stderr)
    answer, scope = _choose_on_terminal(scopes)
    return scope if answer == "always" else answer


def _choose_on_terminal(scopes: tuple[str, ...]) -> tuple[Answer, str]:
    """The answer, with the scope chosen for "always" (keys a and s, one per scope)."""
    keys = dict(zip("as", scopes, strict=False))
    offers = "".join(f"[{key}] always {scope} this session  " for key, scope in keys.items())
    options = _wrap(f"Allow? [y] once  {offers}[n] no:")
    while True:
        print(options, end=" ", file=sys.stderr, flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer in ("y", "yes"):
            return "once", ""
        if answer[:1] in keys and (len(answer) == 1 or answer == "always"):
            return "always", keys[answer[:1]]
        if answer in ("n", "no", ""):
            return "deny", ""


def _wrap(text: str) -> str:
    """`text` wrapped at the terminal's width, breaking only between words."""
    width = shutil.get_terminal_size().columns
    return "\n".join(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False,
                                   replace_whitespace=False) for line in text.split("\n"))


def run_oneshot(session: Session, task: str) -> int:
    settings = session.settings
    if session.policy.mode == "ask" and session.policy.ask is None:
        session.policy.ask = ask_on_terminal
    if session.approvals.confirm is None and sys.stdin.isatty():
        session.approvals.confirm = confirm_on_terminal
    err = stderr_console()
    printer = ProgressPrinter(err, quiet=settings.quiet or settings.json)
    info = session.provider.info
    if not (settings.quiet or settings.json):
        err.print(f"[dim]swival · {info.provider} {info.base_url} · {info.model} · window "
                  f"{info.window.describe()} · {session.agent.tool_ctx.sandbox.describe()}"
                  "[/dim]", soft_wrap=True)
    warning = session.overhead_warning()
    for note in [*session.notices, *([warning] if warning else [])]:
        if not settings.quiet:
            err.print(f"[yellow]{note}[/yellow]", soft_wrap=True)
    tally = Tally()
    _hear_subagents(session, tally, printer)
    error: SwivalError | None = None
    signal_code: int | None = None
    agent = session.agent
    try:
        for event in agent.run_turn(task):
            tally.add(event)
            printer.handle(event)
    except KeyboardInterrupt as stop:
        tally.add(agent.interrupted())
        signal_code = getattr(stop, "exit_code", None)
    except SwivalError as exc:
        error = exc
    finished = tally.finished
    code = error.exit_code if error else EXIT_FOR_REASON[finished.reason if finished else "error"]
    if signal_code is not None:
        code = signal_code
    if settings.json:
        report = session.redactor.scrub(_report(session, tally, code, error))
        print(json.dumps(report, ensure_ascii=False))
    elif error:
        print(f"swival: {session.redactor.redact(str(error))}", file=sys.stderr)
    elif finished and finished.reason == "done":
        print(session.redactor.redact(finished.answer))
    elif finished and finished.reason == "output_limit":
        if finished.partial:  # the incomplete reply is still the result the user asked for
            print(session.redactor.redact(finished.partial))
        print(f"swival: {session.redactor.redact(finished.answer)}", file=sys.stderr)
    elif finished and finished.reason == "interrupted":
        print("swival: terminated" if code == 143 else "swival: interrupted", file=sys.stderr)
    return code


def _hear_subagents(session: Session, tally: Tally, printer: ProgressPrinter) -> None:
    """A subagent's steps, while a task call runs, are counted and shown like the
    agent's own events."""

    def heard(event: Event) -> None:
        tally.add(event)
        printer.handle(event)

    session.agent.tool_ctx.on_event = heard


def print_failure(settings: Settings, error: SwivalError) -> int:
    """--json before a session exists (server unreachable, no model): still one object."""
    report = {
        "answer": "", "exit_reason": "error", "exit_code": error.exit_code,
        "error": str(error), "turns": 0, "tool_calls": 0,
        "tokens": {"prompt": 0, "completion": 0}, "compactions": [], "files_changed": [],
        "subagents": {"tasks": 0, "failed": 0, "tokens": {"prompt": 0, "completion": 0}},
        "provider": settings.provider, "base_url": settings.base_url, "model": settings.model,
        "window": settings.max_context_tokens, "window_source": None, "session_id": None,
        "ignored_project_keys": list(settings.held_back),
        "cost_usd": None,
    }
    print(json.dumps(redactor_for(settings, os.environ).scrub(report), ensure_ascii=False))
    return error.exit_code


def _report(session: Session, tally: Tally, code: int, error: SwivalError | None) -> dict:
    done = tally.finished
    info = session.provider.info
    reason = done.reason if done else ("context_exhausted" if code == 5 else "error")
    cut = done is not None and done.reason == "output_limit"
    message = str(error) if error else (done.answer if cut and done else None)
    return {
        "answer": done.answer if done and done.reason == "done" else (
            done.partial if cut and done else ""),
        "exit_reason": reason,
        "exit_code": code,
        "error": message,
        "turns": done.turns if done else 0,
        "tool_calls": done.tool_calls if done else 0,
        "tokens": {
            "prompt": done.usage.prompt_tokens if done else 0,
            "completion": done.usage.completion_tokens if done else 0,
        },
        "compactions": tally.compactions,
        "files_changed": [{"path": p, "change": k} for p, k in tally.files_changed.items()],
        "subagents": _subagents(session),
        "provider": info.provider,
        "base_url": info.base_url,
        "model": info.model,
        "window": info.window.tokens,
        "window_source": info.window.source,
        "session_id": session.agent.context.session_id,
        "ignored_project_keys": list(session.settings.held_back),
        "cost_usd": spent(session.provider),
    }


def _subagents(session: Session) -> dict[str, Any]:
    """The task calls' children, counted apart from `tokens` (the parent's own calls)."""
    totals = session.agent.tool_ctx.subagents
    return {"tasks": totals.tasks, "failed": totals.failed,
            "tokens": {"prompt": totals.prompt_tokens,
                       "completion": totals.completion_tokens}}
