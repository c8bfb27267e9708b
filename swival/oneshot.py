"""One-shot mode: the final answer alone on stdout and progress on stderr; or, on stdout,
one JSON object (`--json`) or one per event (`--output-format stream-json`).

Exit codes: 0 done, 1 runtime error or a reply the output limit kept cutting, 2
usage/config, 3 provider unreachable or model missing, 4 turn limit, 5 context exhausted,
130 interrupted, 143 terminated (SIGTERM).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swival.errors import SwivalError
from swival.events import Compacted, Event, SubagentStep, ToolFinished, TurnFinished
from swival.messages import clean_text
from swival.providers.factory import spent
from swival.records import JsonLines, print_report
from swival.render import ProgressPrinter, outcome, say, screen_text, stderr_console
from swival.render.asking import (
    action_question,
    command_question,
    found_line,
    not_an_answer,
    options,
    read_answer,
)
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
                 "tokens_before": event.tokens_before, "tokens_after": event.tokens_after,
                 "reprocessed": event.reprocessed}
            )
        elif isinstance(event, ToolFinished | SubagentStep) and event.result is not None:
            for path, kind in event.result.meta.get("changed", ()):
                if self.files_changed.get(path) != "created":
                    self.files_changed[path] = kind
        elif isinstance(event, TurnFinished):
            self.finished = event


def ask_on_terminal(question: Question, who: str = "") -> Answer:
    """Approval for one-shot runs started from a terminal: asked on stderr, read from stdin,
    in the REPL's words (swival/render/asking.py). Lines are wrapped at the terminal's
    width between words. `who` is "subagent N" while a subagent runs."""
    lines = [command_question(question.shown, who), found_line(question.found)]
    print("\n" + _wrap("\n".join(line for line in lines if line)), file=sys.stderr)
    programs = ", ".join(question.programs)
    return _choose_on_terminal((programs,) if programs else ())[0]


def confirm_on_terminal(action: str, scopes: tuple[str, ...], detail: str,
                        who: str = "") -> str:
    """Any other approval (a fetch, an MCP tool, an edit with its diff as `detail`; see
    swival/tools/approval.py), asked the same way."""
    if detail:
        print("\n" + screen_text(detail).rstrip("\n"), file=sys.stderr)
    print("\n" + _wrap(action_question(action, who)), file=sys.stderr)
    answer, scope = _choose_on_terminal(scopes)
    return scope if answer == "always" else answer


def _choose_on_terminal(scopes: tuple[str, ...]) -> tuple[Answer, str]:
    """The answer, with the scope chosen for "always"; anything else is asked again.
    End of input (Ctrl-D) refuses; Ctrl-C propagates and interrupts the run."""
    prompt = _wrap(options(scopes))
    while True:
        print(prompt, end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            print(file=sys.stderr)
            return "deny", ""
        choice = read_answer(line, scopes)
        if choice is not None:
            return choice
        print(_wrap(not_an_answer(line, scopes)), file=sys.stderr)


def _wrap(text: str) -> str:
    """`text` wrapped at the terminal's width, breaking only between words (a trailing
    space, after the answers offered, is kept)."""
    width = shutil.get_terminal_size().columns
    wrapped = "\n".join(textwrap.fill(line, width, break_long_words=False,
                                      break_on_hyphens=False, replace_whitespace=False)
                        for line in text.split("\n"))
    return wrapped + (" " if text.endswith(" ") else "")


def run_oneshot(session: Session, task: str) -> int:
    """Run `task` to its end; the exit code. The answer goes to stdout (or the `--json`
    object, or the stream-json lines), progress to stderr."""
    settings = session.settings
    machine = settings.output_format != "text"
    printer = ProgressPrinter(stderr_console(), quiet=settings.quiet or machine)
    if session.policy.mode == "ask" and session.policy.ask is None:
        session.policy.ask = lambda question: _paused(printer, ask_on_terminal, question,
                                                      printer.asking)
    if session.approvals.confirm is None and sys.stdin.isatty() and sys.stderr.isatty():
        session.approvals.confirm = lambda action, scopes, detail: _paused(
            printer, confirm_on_terminal, action, scopes, detail, printer.asking)
    lines = (JsonLines(sys.stdout, session.redactor, outcome)
             if settings.output_format == "stream-json" else None)
    _announce(session, lines)
    tally = Tally()
    hear = _listener(tally, printer, lines)
    session.agent.listen(hear)  # a subagent's steps, while a task call runs
    error: SwivalError | None = None
    signal_code: int | None = None
    agent = session.agent
    try:
        for event in agent.run_turn(task):
            hear(event)
    except KeyboardInterrupt as stop:
        printer.interrupted()
        if lines is not None:
            lines.interrupted()
        tally.add(agent.interrupted())
        signal_code = getattr(stop, "exit_code", None)
    except SwivalError as exc:
        error = exc
    finished = tally.finished
    code = error.exit_code if error else EXIT_FOR_REASON[finished.reason if finished else "error"]
    if signal_code is not None:
        code = signal_code
    if machine:
        print_report(_report(session, tally, code, error), settings.output_format,
                     session.redactor)
    else:
        _print_outcome(session, finished, error, code)
    return code


def _paused(printer: ProgressPrinter, ask: Callable[..., Any], *args: Any) -> Any:
    """Ask the person with the printer told (the time asking is not the call's time)."""
    with printer.paused():
        return ask(*args)


def _listener(tally: Tally, printer: ProgressPrinter,
              lines: JsonLines | None) -> Callable[[Event], None]:
    """What becomes of each event, the agent's own or a subagent's: counted for the
    report, shown on stderr, and written as a stream-json record."""

    def hear(event: Event) -> None:
        tally.add(event)
        printer.handle(event)
        if lines is not None:
            lines.event(event)

    return hear


def _announce(session: Session, lines: JsonLines | None) -> None:
    """The start-up line and notices on stderr; with stream-json, the `start` record and
    the notices as records too."""
    settings = session.settings
    err = stderr_console()
    info = session.provider.info
    if not (settings.quiet or settings.output_format != "text"):
        say(session.redactor.redact(  # a key can sit in the base URL's query string
            f"swival · {info.provider} {info.base_url} · {info.model} · window "
            f"{info.window.describe()} · {session.agent.describe_sandbox()}"), "dim", err)
    if lines is not None:
        lines.write({"type": "start", "provider": info.provider, "base_url": info.base_url,
                     "model": info.model, "window": info.window.tokens,
                     "window_source": info.window.source,
                     "session_id": session.agent.context.session_id})
    warning = session.overhead_warning()
    for note in [*session.notices, *([warning] if warning else [])]:
        if not settings.quiet:
            say(note, "yellow", err)
        if lines is not None:
            lines.write({"type": "notice", "level": "warning", "text": note})


def _print_outcome(session: Session, finished: TurnFinished | None,
                   error: SwivalError | None, code: int) -> None:
    """Text output: the answer on stdout, what went wrong on stderr. On a terminal the
    answer's control characters are shown as escapes (as the REPL shows them), so a
    model cannot move the cursor or retitle the window; into a pipe it goes as it is."""
    redact = session.redactor.redact
    shown = screen_text if sys.stdout.isatty() else clean_text
    if error:
        say(f"swival: {redact(str(error))}")
    elif finished and finished.reason == "done":
        print(shown(redact(finished.answer)))
    elif finished and finished.reason == "output_limit":
        if finished.partial:  # the incomplete reply is still the result the user asked for
            print(shown(redact(finished.partial)))
        say(f"swival: {redact(finished.answer)}")
    elif finished and finished.reason == "interrupted":
        say("swival: terminated" if code == 143 else "swival: interrupted")


def _report(session: Session, tally: Tally, code: int, error: SwivalError | None) -> dict:
    done = tally.finished
    info = session.provider.info
    reason = done.reason if done else ("context_exhausted" if code == 5 else "error")
    cut = done is not None and done.reason == "output_limit"
    stopped = done is not None and done.reason in ("output_limit", "max_turns")
    message = str(error) if error else (done.answer if stopped and done else None)
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
    totals = session.agent.subagent_totals
    return {"tasks": totals.tasks, "failed": totals.failed,
            "tokens": {"prompt": totals.prompt_tokens,
                       "completion": totals.completion_tokens}}
