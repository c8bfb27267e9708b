"""The snapshot scope: where a restore starts and whether it may run, as values, and
the words the model reads about it.

A scope starts at the checkpoint `save` set (the turn after the one that saved), or
without one after the last user turn or the previous restore, whichever is later.
Results of tools that are not read-only (they declare it) inside the scope make it
dirty: a restore then needs force=true, so the model cannot summarize away the record
of its own changes by accident. A compaction that drops turns (levels 2 and 3) moves
every turn index, so it drops the checkpoint and the boundary (`rewritten`).

Outcomes are typed (`Saved`, `Cancelled`, `Status`, `Refused`, `Restored`); `for_model`
words them for the model, and the REPL's commands word them for a person.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from swival.context.history import History
from swival.events import Compacted
from swival.words import plural

SUMMARY_MIN_CHARS = 20


@dataclass(frozen=True)
class Scope:
    checkpoint: int | None = None  # turn index where the scope starts
    label: str | None = None
    boundary: int | None = None  # turn index after the last restore
    lost: bool = False  # a compaction dropped the checkpoint

    def start(self, history: History) -> int:
        """The turn index where a restore starts."""
        if self.checkpoint is not None:
            return min(self.checkpoint, len(history.turns))
        users = [i for i, t in enumerate(history.turns) if t.head.role == "user"]
        return max(users[-1] + 1 if users else 0, self.boundary or 0)

    def rewritten(self) -> Scope:
        return Scope(lost=self.checkpoint is not None)


@dataclass(frozen=True)
class Saved:
    label: str | None
    replaced: bool  # an earlier checkpoint was replaced
    previous: str | None = None


@dataclass(frozen=True)
class Cancelled:
    label: str | None
    existed: bool


@dataclass(frozen=True)
class Status:
    label: str | None
    checkpoint: bool
    messages_since: int
    changes: tuple[str, ...]  # tools that changed the workspace inside the scope
    lost: bool


@dataclass(frozen=True)
class Refused:
    why: Literal["dirty", "empty", "no summary", "no summarizer", "summary failed"]
    changes: tuple[str, ...] = ()
    since: str = ""


@dataclass(frozen=True)
class Restored:
    label: str | None
    collapsed: int  # messages replaced by the summary
    event: Compacted


Outcome = Saved | Cancelled | Status | Refused | Restored


def changes(history: History, start: int) -> tuple[str, ...]:
    """Names of the tools, not read-only, whose results lie in turns[start:]."""
    names = [f.tool for t in history.turns[start:] for f in t.facts[1:]
             if f is not None and not f.read_only]
    return tuple(dict.fromkeys(names))


def since_words(scope: Scope) -> str:
    if scope.checkpoint is not None:
        return "since the checkpoint"
    return "since the last restore" if scope.boundary is not None else "in this request"


def save(scope: Scope, label: str | None, turns: int) -> tuple[Scope, Saved]:
    previous = scope.label if scope.checkpoint is not None else None
    saved = Saved(label, scope.checkpoint is not None, previous)
    return replace(scope, checkpoint=turns, label=label, lost=False), saved


def cancel(scope: Scope) -> tuple[Scope, Cancelled]:
    return replace(scope, checkpoint=None, label=None), Cancelled(scope.label,
                                                                  scope.checkpoint is not None)


def status(scope: Scope, history: History) -> Status:
    start = scope.start(history)
    since = sum(len(t.messages) for t in history.turns[start:])
    return Status(scope.label, scope.checkpoint is not None, since,
                  changes(history, start), scope.lost)


def _name(label: str | None) -> str:
    return f"'{label}'" if label else "(unnamed)"


def for_model(outcome: Outcome) -> str:
    """The text the model reads as the snapshot call's result."""
    if isinstance(outcome, Saved):
        replaced = f" It replaces checkpoint {_name(outcome.previous)}." if outcome.replaced else ""
        return (f"Checkpoint {_name(outcome.label)} saved.{replaced} When you have what you "
                "need, restore with a summary of your findings.")
    if isinstance(outcome, Cancelled):
        return (f"Checkpoint {_name(outcome.label)} cancelled; nothing was collapsed."
                if outcome.existed else "There is no checkpoint to cancel; nothing changed.")
    if isinstance(outcome, Status):
        return _status_text(outcome)
    if isinstance(outcome, Refused):
        return _refusal_text(outcome)
    event = outcome.event
    return (f"Collapsed {outcome.collapsed} messages into your summary ({event.tokens_before} -> "
            f"{event.tokens_after} tokens). The summary is pinned and survives compaction.")


def _status_text(status: Status) -> str:
    if status.checkpoint:
        head = f"Checkpoint {_name(status.label)}: {status.messages_since} messages since it."
    else:
        lost = " (the last one was dropped when history was compacted)" if status.lost else ""
        head = (f"No checkpoint{lost}; restore would collapse everything since the last user "
                "message or previous restore.")
    if status.changes:
        changed = ", ".join(status.changes)
        return head + f" Changes since then ({changed}): restore needs force=true."
    return head + " Only reads since then: restore is allowed."


def _refusal_text(refused: Refused) -> str:
    if refused.why == "dirty":
        return (f"error: the scope has changes ({', '.join(refused.changes)} {refused.since}). "
                "A restore would replace the record of them with your summary. If the summary "
                "states what you changed, restore again with force=true.")
    if refused.why == "no summary":
        return ("error: restore needs `summary`: write what you learned (findings, paths, "
                "decisions) and call it again.")
    if refused.why == "empty":
        return "Nothing to collapse since the checkpoint."
    if refused.why == "no summarizer":
        return "No summarizer is available, so the summary cannot be written."
    return "The model could not write a summary; nothing was collapsed."


PERSON_REFUSALS = {
    "no summary": "not collapsed: the call gave no summary",
    "empty": "nothing to collapse",
    "no summarizer": "not collapsed: no summarizer is available",
    "summary failed": "not collapsed: the summary could not be written",
}


def for_person(outcome: Outcome) -> str:
    """A few words on the snapshot call's outcome for the person watching (the screen
    shows the tokens a restore saved from its Compacted event)."""
    if isinstance(outcome, Saved):
        replaced = f", replacing {_name(outcome.previous)}" if outcome.replaced else ""
        return f"checkpoint {_name(outcome.label)} saved{replaced}"
    if isinstance(outcome, Cancelled):
        return (f"checkpoint {_name(outcome.label)} cancelled" if outcome.existed
                else "no checkpoint to cancel")
    if isinstance(outcome, Status):
        where = f"checkpoint {_name(outcome.label)}" if outcome.checkpoint else "no checkpoint"
        return f"{where}, {plural(outcome.messages_since, 'message')} since"
    if isinstance(outcome, Refused):
        if outcome.why == "dirty":
            return (f"not collapsed: {', '.join(outcome.changes)} changed things "
                    f"{outcome.since}; the model must confirm with force")
        return PERSON_REFUSALS.get(outcome.why, "not collapsed")
    return f"collapsed {plural(outcome.collapsed, 'message')} into the model's summary"
