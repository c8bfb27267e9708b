"""Events the agent yields while a turn runs. The agent never prints; the REPL,
the one-shot runner and the transcript consume these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from swival.messages import ToolCall, ToolResult, Usage


@dataclass(frozen=True)
class TextDelta:
    """A piece of the assistant's visible text as it streams."""

    text: str


@dataclass(frozen=True)
class ModelCallStarted:
    """A request is about to go to the model (for spinners and status bars)."""

    prompt_tokens: int
    window: int


@dataclass(frozen=True)
class ReplyRestarted:
    """The reply being streamed failed or was cut and is asked for again: the text deltas
    since the last ModelCallStarted, if any, are superseded (the REPL shows them as such).
    `reason` is for a person."""

    reason: str


@dataclass(frozen=True)
class Continued:
    """A reply the output limit cut is kept, and the model is asked to go on from where it
    stopped. `count`: replies cut in a row so far; `limit`: their token limit."""

    count: int
    limit: int


@dataclass(frozen=True)
class ModelCallFinished:
    """A model call completed; `usage` as reported by the server, when it reported one."""

    usage: Usage | None
    context_tokens: int


@dataclass(frozen=True)
class ToolStarted:
    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    call: ToolCall
    result: ToolResult
    seconds: float


@dataclass(frozen=True)
class Compacted:
    """History was rewritten to fit the window. `level`: 1 shrink, 2 drop, 3 nuclear,
    4 emergency (reason "emergency": turns dropped without asking the model for a recap);
    0 marks a snapshot collapse requested by the model or the user. `reprocessed`: the
    tokens the server must compute again because of the rewrite (its cache holds the
    previous request up to the first change)."""

    level: int
    reason: str
    tokens_before: int
    tokens_after: int
    turn: int
    reprocessed: int = 0
    note: str = ""  # for people, when there is more to say (an emergency drop: where to look)


@dataclass(frozen=True)
class Checkpointed:
    """A proactive checkpoint summary, written in the background, was stored."""

    turn: int
    messages: int  # messages it summarizes
    tokens: int  # its size


@dataclass(frozen=True)
class Notice:
    """Something the user should see that is not part of the answer."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class SubagentStep:
    """Something a subagent did while the parent's `task` call runs, shown indented
    under that call (tools report it through ToolContext.on_event, not the agent).
    `task` numbers the session's task calls from 1; `description` is the parent's label
    for it. The first step of each task carries `prompt` (what the child was asked, cut
    at a word); a tool call the child starts carries `call` alone, one it finished (or
    that a Ctrl-C interrupted) `call`, `result` and `seconds`; anything else it reports
    (a notice, a compaction) is `text` at `level`."""

    task: int
    description: str
    call: ToolCall | None = None
    result: ToolResult | None = None
    seconds: float = 0.0
    text: str = ""
    level: Literal["info", "warning", "error"] = "info"
    prompt: str = ""


ExitReason = Literal["done", "max_turns", "interrupted", "context_exhausted", "output_limit",
                     "error"]


@dataclass(frozen=True)
class TurnFinished:
    """The last event of every turn. `answer` is the final answer when `reason` is
    "done", else what the user should be told; `partial` is the text of a reply the
    output limit kept cutting ("output_limit")."""

    answer: str
    reason: ExitReason
    turns: int
    tool_calls: int
    usage: Usage = field(default_factory=Usage)
    partial: str = ""


Event = (
    TextDelta
    | ModelCallStarted
    | ReplyRestarted
    | Continued
    | ModelCallFinished
    | ToolStarted
    | ToolFinished
    | Compacted
    | Checkpointed
    | Notice
    | SubagentStep
    | TurnFinished
)
