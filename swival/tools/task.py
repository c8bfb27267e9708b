"""task: hand a self-contained job to a subagent and get back only its answer.

The child has a fresh context on the same model and window, read-only tools unless the
settings widen them (never beyond what the parent may do), its own turn limit and no
task tool. A tool cannot build an agent: the child runs through `ToolContext.spawn`,
which the session layer provides, and what it does reaches the screen as SubagentStep
events through `ToolContext.on_event`. Only its final answer comes back, capped at
ANSWER_CHARS and at the window-scaled share the spawner reports (the whole answer is
then saved for read_file), together with the name of the transcript that holds the
child's conversation. A child that stops without an answer gives a tool error.

The person sees the child work: a first step names the job and what the child was asked,
then each tool call it starts and finishes; a Ctrl-C during a child's call leaves that call
marked interrupted before the interruption propagates.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from swival.events import Compacted, Event, Notice, SubagentStep, ToolFinished, ToolStarted
from swival.messages import ToolCall, ToolResult
from swival.tools.base import ChildRun, ToolContext, ToolError, ToolSpec
from swival.tools.spilled import head_or_spill
from swival.words import clip, plural

ANSWER_CHARS = 4000  # about 1,000 tokens: the most one delegated answer costs the parent
LABEL_CHARS = 60
PROMPT_CHARS = 120  # of the prompt, on the line that shows the child starting

PARAMETERS = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": "A few words naming the job."},
        "prompt": {"type": "string", "description": (
            "Complete instructions; the subagent sees nothing of this conversation. Say "
            "what to report.")},
    },
    "required": ["description", "prompt"],
}
READ_ONLY_TEXT = (
    "Delegate a self-contained investigation (surveying files, finding where something "
    "is done) to a subagent with a fresh context and read-only tools. Only its final "
    "answer comes back: you pay for the conclusion, not the exploration.")
WIDENED_TEXT = (
    "Delegate a self-contained job to a subagent with a fresh context and your tools. "
    "Only its final answer comes back: you pay for the conclusion, not the work.")

class Task:
    """`task(description, prompt)`. `read_only`: the children get read-only tools only,
    so running one changes nothing (see swival/tools/base.py's Tool). The children get
    only the tools the parent is offered now, so in plan mode they are read-only too
    (`follows_mode`) and the tool is offered there whatever `subagent_tools` says."""

    follows_mode = True

    def __init__(self, read_only: bool = True) -> None:
        self.read_only = read_only
        self.spec = ToolSpec("task", READ_ONLY_TEXT if read_only else WIDENED_TEXT,
                             PARAMETERS)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.spawn is None:
            raise ToolError("no subagent can be started here (a subagent cannot start "
                            "another); do the work with your own tools.",
                            "refused: a subagent cannot start another")
        label = clip(str(args["description"]), LABEL_CHARS) or "task"
        prompt = str(args["prompt"]).strip()
        if not prompt:
            raise ToolError("`prompt` is empty: write the complete instructions, since the "
                            "subagent sees nothing of this conversation.",
                            "not started: the model gave no instructions")
        ctx.subagents.tasks += 1
        number = ctx.subagents.tasks
        running: list[tuple[ToolCall, float]] = []  # the child's call in progress

        def forward(event: Event) -> None:
            if isinstance(event, ToolStarted):
                running[:] = [(event.call, time.monotonic())]
            elif isinstance(event, ToolFinished):
                running.clear()
            step = _step(number, label, event)
            if step is not None:
                ctx.on_event(step)

        ctx.on_event(SubagentStep(number, label, prompt=clip(prompt, PROMPT_CHARS)))
        try:
            run = ctx.spawn(prompt, ANSWER_CHARS, forward)
        except KeyboardInterrupt:
            ctx.on_event(_interrupted(number, label, running))
            raise
        return _result(run, label, ctx)


def _interrupted(number: int, label: str, running: list[tuple[ToolCall, float]]
                 ) -> SubagentStep:
    """The step that says a Ctrl-C stopped the child: its call in progress, if any."""
    if not running:
        return SubagentStep(number, label, level="warning",
                            text="interrupted while waiting for the model")
    call, since = running[0]
    took = time.monotonic() - since
    result = ToolResult("interrupted", is_error=True,
                        meta={"summary": f"interrupted after {took:.1f}s"})
    return SubagentStep(number, label, call=call, result=result, seconds=took)


def _step(number: int, label: str, event: Event) -> SubagentStep | None:
    """The child's event as the parent's screen shows it; None for what it does not."""
    if isinstance(event, ToolStarted):
        return SubagentStep(number, label, call=event.call)
    if isinstance(event, ToolFinished):
        return SubagentStep(number, label, call=event.call, result=event.result,
                            seconds=event.seconds)
    if isinstance(event, Notice):
        return SubagentStep(number, label, text=event.text, level=event.level)
    if isinstance(event, Compacted):
        return SubagentStep(number, label, level="warning", text=(
            f"compacted its context: {event.tokens_before} → {event.tokens_after} tokens "
            f"({event.reason})"))
    return None


def _result(run: ChildRun, label: str, ctx: ToolContext) -> ToolResult:
    """The child's answer (capped) or why it has none, naming its transcript."""
    meta: dict[str, Any] = {"subagent": label, "transcript": run.transcript,
                            "turns": run.turns, "tool_calls": run.tool_calls}
    if run.reason != "done":
        return ToolResult(
            f"error: the subagent for \"{label}\" stopped without an answer: {run.error} "
            f"Its conversation so far is in {run.transcript}. Do the work yourself, or "
            "call task again with a narrower prompt.", is_error=True, meta=meta)
    answer = run.answer.strip() or "(the subagent gave an empty answer)"
    shown, saved = head_or_spill(answer, run.limit, ctx, "task", "answer")
    if saved:
        saved["offset"] = 0  # the saved answer's first line comes after the header line
    calls = plural(run.tool_calls, "tool call")
    head = (f"[answer of the subagent for \"{label}\", after "
            f"{plural(run.turns, 'model call')} and {calls}; its whole conversation: "
            f"{run.transcript}]")
    summary = f"answered after {calls}"
    return ToolResult(f"{head}\n{shown}", meta={**meta, **saved, "summary": summary})


def withheld(name: str, given: list[str], read_only: bool) -> tuple[str, str]:
    """What a subagent is told when it calls a tool of its parent's it was not given
    (`given`: its tools; `read_only`: it has only those that change nothing): the words
    for the model and for the person."""
    if name == "task":
        return ("error: you are a subagent and cannot start another; do the work with your "
                "own tools.", "refused: a subagent cannot start another")
    what = ("a read-only subagent: your tools change nothing" if read_only
            else "a subagent with only the tools listed here")
    return (f"error: {name} is not available to you: you are {what} ({', '.join(given)}). "
            "Do not try to make the change another way: finish the job and say in your "
            "answer what should change (file, place, new text); the agent that started "
            "you can do it.",
            f"refused: a {'read-only ' if read_only else ''}subagent has no {name}")
