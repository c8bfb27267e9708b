"""The words and lines that say what a tool call did, what a compaction did, and what an
edit changed; shared by the REPL's view and the pipe printer.

A tool line tells the person what the model actually got: a read the context engine cut
says how many lines reached the model and where the full text is, a paged read names its
range, a search names its pattern, a failed command (exit code other than 0), a refusal
and an error are marked with a cross, and refusals are worded for the person (the
tool's `meta["summary"]`), not for the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rich.text import Text

from swival.events import Checkpointed, Compacted, SubagentStep
from swival.messages import ToolCall, ToolResult, clean_text
from swival.providers.repair import REPAIR_NOTE_START
from swival.words import lines_of, plural

KEY_ARGUMENTS = ("file_path", "path", "pattern", "command", "url", "action", "thought",
                 "description")
TAIL_LINES = 3  # lines of a command's output shown under its tool line
NOTICE_STYLES = {"info": "dim", "warning": "yellow", "error": "red"}
OK_MARK, FAIL_MARK = "•", "✗"
# Control characters other than tab and newline: in model or file text they could move the
# cursor, retitle the window or worse, so they are shown as escapes instead.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The line run_command ends its output with (its verdict), and what may follow it.
_VERDICT = re.compile(r"^\[(exit code -?\d+|timed out after |killed by signal )", re.M)


def screen_text(text: str) -> str:
    """Text from the model or from files made safe to print: control characters become
    visible escapes (`\\x1b`) and lone surrogates U+FFFD."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", clean_text(text))


def one_line(text: str, limit: int | None = None) -> str:
    """`text` on one line (whitespace runs become one space), made safe to print, and
    cut to `limit` characters with an ellipsis (None: never cut)."""
    flat = screen_text(" ".join(text.split()))
    if limit is None or len(flat) <= limit:
        return flat
    return flat[:max(1, limit - 1)] + "…"


def key_argument(call: ToolCall, limit: int | None = 60) -> str:
    """What a call works on, in a few words: a search's pattern (and its path when not
    the project root); for MCP calls the server and tool, then the first string argument
    of the remote tool; else the first of KEY_ARGUMENTS it has."""
    args = call.arguments
    pattern, where = args.get("pattern"), args.get("path")
    if call.name == "grep" and isinstance(pattern, str) and pattern:
        place = f" in {where}" if isinstance(where, str) and where not in ("", ".", "./") else ""
        return one_line(f'"{pattern}"{place}', limit)
    if call.name in ("mcp_call", "mcp_list"):
        inner = args.get("arguments")
        named = [args.get("server"), args.get("tool"),
                 _first_text(inner) if isinstance(inner, Mapping) else None]
        return one_line(" ".join(part for part in named if isinstance(part, str) and part),
                        limit)
    if call.name.startswith("mcp__"):  # mcp__SERVER__TOOL: the name says which
        return one_line(_first_text(args), limit)
    for name in KEY_ARGUMENTS:
        value = args.get(name)
        if isinstance(value, str) and value:
            return one_line(value, limit)
    return ""


def _first_text(args: Mapping[str, Any]) -> str:
    """An MCP tool's key argument: the first of KEY_ARGUMENTS, else its first text."""
    named = [args.get(name) for name in KEY_ARGUMENTS]
    return next((v for v in [*named, *args.values()] if isinstance(v, str) and v), "")


def _for_person(text: str) -> str:
    """A result's text without the line that tells the model its arguments were repaired
    (the person got that as a notice of its own)."""
    return text.split("\n", 1)[-1] if text.startswith(REPAIR_NOTE_START) else text


def _first_sentence(text: str) -> str:
    text = _for_person(text)
    line = next((part for part in text.strip().splitlines() if part.strip()), "error")
    line = line.removeprefix("error: ")
    return line.split(". ", 1)[0].rstrip(".")


def _read_range(meta: Mapping[str, Any], got: int | None) -> str:
    """Which lines of a file a read gave the model: all of them, the first N of M, or
    a range when it started further down."""
    total, shown = meta.get("lines"), int(meta.get("shown") or 0)
    offset = int(meta.get("offset") or 1)
    if got is not None:
        shown = min(shown, got)
    if not isinstance(total, int):
        return plural(shown, "line")
    if got is None and meta.get("spill_path"):  # cut, without the figures of the cut
        return f"cut to fit from {plural(total, 'line')}"
    if offset <= 1:
        return lines_of(shown, total)
    return f"lines {offset}-{offset + max(shown, 1) - 1} of {total}"


def _spill_note(meta: Mapping[str, Any]) -> str:
    """What the context engine's cut (or the tool's own spill) means for the model. A
    command's long output reached it as head and tail already (`preview_lines` of its
    `output_lines`): its figures are counted against the whole output."""
    path = meta.get("spill_path")
    where = f"; full text in {path}" if path else ""
    cut = meta.get("context_cut")
    output = meta.get("output_lines")
    if isinstance(cut, Mapping):
        if meta.get("kind") == "file" and "summary" not in meta:  # a read: its range says
            return f", cut to fit{where}"
        got, total = cut.get("kept_lines"), cut.get("total_lines")
        if isinstance(output, int) and isinstance(got, int):
            got, total = min(got, meta.get("preview_lines", got)), output
        return f", cut to fit ({got} of {total} lines reached the model){where}"
    if isinstance(output, int):
        return f", {meta.get('preview_lines')} of {output} lines reached the model{where}"
    return where


def outcome(result: ToolResult) -> str:
    """A few words on how a tool call went, for a person: a tool's own summary when it
    gives one (refusals: what happened, not what the model should do), else from its
    metadata; errors by their first sentence."""
    meta: Mapping[str, Any] = result.meta
    if result.is_error:
        said = meta.get("summary") or _first_sentence(result.content)
        return screen_text(str(said))
    cut = meta.get("context_cut")
    got = cut.get("kept_lines") if isinstance(cut, Mapping) else None
    if "summary" in meta:  # a tool's own few words (fetch_url: status and size)
        said = str(meta["summary"])
    elif "exit_code" in meta:
        said = f"exit {meta['exit_code']}"
    elif "matches" in meta:
        said = plural(int(meta["matches"]), "match", "matches")
    elif meta.get("kind") == "file" and "shown" in meta:
        said = _read_range(meta, got)
    elif "count" in meta:
        said = plural(int(meta["count"]), "entry", "entries")
    elif meta.get("changed"):
        said = ", ".join(f"{kind} {path}" for path, kind in meta["changed"])
    else:
        said = "ok"
    return screen_text(said + _spill_note(meta))


def command_tail(result: ToolResult, lines: int = TAIL_LINES) -> list[str]:
    """The last few non-empty lines a command printed (before its verdict line), made
    safe to print; empty when it printed nothing or did not run."""
    if result.meta.get("kind") != "command":
        return []
    text = _for_person(result.content)
    verdicts = list(_VERDICT.finditer(text))
    if not verdicts:
        return []
    body = text[:verdicts[-1].start()]
    kept = [line.rstrip() for line in body.splitlines()
            if line.strip() and not line.startswith("[... ")]
    return [screen_text(line.expandtabs(4)) for line in kept[-lines:]]


def tool_words(call: ToolCall, result: ToolResult, seconds: float) -> tuple[str, str, str, str]:
    """(mark, name, outcome, time) of a finished call; time is empty under 0.1 s."""
    took = f" · {seconds:.1f}s" if seconds >= 0.1 else ""
    mark = FAIL_MARK if result.failed else OK_MARK
    return mark, screen_text(call.name), outcome(result), took


def tool_line(call: ToolCall, result: ToolResult, seconds: float, width: int) -> Text:
    """One line for a finished tool call: mark, name, key argument, outcome, time; the
    outcome red on failure. The key argument gets most of a narrow line; the outcome is
    cut first (with an ellipsis)."""
    mark, name, said, took = tool_words(call, result, seconds)
    bad = result.failed
    room = max(12, width - len(name) - len(took) - 3)
    key = key_argument(call, limit=max(8, room - min(len(said) + 3, room // 3)))
    text = Text(f"{mark} {name}" + (" " if key else ""), style="red" if bad else "dim")
    text.append(key, style="red" if result.is_error else "bold")
    path = result.meta.get("spill_path")
    text.append(_fit(f" — {said}", max(0, room - len(key)),
                     screen_text(path) if isinstance(path, str) else None),
                style="red" if bad else "dim")
    text.append(took, style="dim")
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def _fit(rest: str, space: int, path: str | None) -> str:
    """`rest` cut to `space` characters between words, with an ellipsis; a saved file's
    path in it loses its folders first and is never cut, so the file name stays visible."""
    if len(rest) <= space:
        return rest
    if path and path in rest:
        name = "…/" + path.rsplit("/", 1)[-1]
        rest = rest.replace(path, name)
        if len(rest) <= space:
            return rest
        keep = space - len(name) - 1
        if keep >= 8:
            return _cut_words(rest[:rest.index(name)], keep) + " " + name
    return _cut_words(rest, space)


def _cut_words(text: str, space: int) -> str:
    """`text` cut to `space` characters with an ellipsis, at a word boundary when there
    is one past the leading dash."""
    cut = text[:max(0, space - 1)]
    if " " in cut[3:] and not text[len(cut):].startswith(" "):
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;") + "…"


def subagent_lines(event: SubagentStep, task: int, width: int | None,
                   seconds: float | None = None) -> list[Text]:
    """A subagent's step, indented under the parent's task call; led by a line naming
    the task (and what it was asked, on its first step) when it is not the one shown last
    (`task`). A call just started shows nothing here (the live view shows it). `width`
    None: lines are not cut (pipes); `seconds` overrides the step's own time."""
    lines = []
    if event.task != task or event.prompt:
        asked = f" — asked: {screen_text(event.prompt)}" if event.prompt else ""
        lines.append(Text(f"  ↳ subagent {event.task}: {screen_text(event.description)}"
                          + asked, style="dim"))
    if event.call is not None and event.result is not None:
        took = event.seconds if seconds is None else seconds
        line = tool_line(event.call, event.result, took, max(20, (width or 10_000) - 4))
        lines.append(Text("    ").append_text(line))
    elif event.text:
        lines.append(Text("    " + screen_text(event.text), style=NOTICE_STYLES[event.level]))
    return lines


def compaction_line(event: Compacted) -> str:
    what = {0: "snapshot restore", 4: "emergency compaction"}.get(
        event.level, f"compaction level {event.level}")
    again = f"{event.reprocessed} cached tokens to recompute" if event.reprocessed else ""
    why = "; ".join(part for part in (event.reason if event.reason not in what else "",
                                      again) if part)
    return (f"{what}: {event.tokens_before} → {event.tokens_after} tokens"
            + (f" ({why})" if why else ""))


def checkpoint_line(event: Checkpointed) -> str:
    return (f"checkpoint summary of {plural(event.messages, 'message')} saved "
            f"({event.tokens} tokens, written in the background)")


def diff_text(diff: str, limit: int = 40) -> Text:
    """A unified diff coloured line by line (added green, removed red, hunks cyan)."""
    lines = screen_text(diff.rstrip("\n")).splitlines()
    out = Text()
    for line in lines[:limit]:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = "dim"
        out.append("    " + line + "\n", style=style)
    if len(lines) > limit:
        out.append(f"    … {plural(len(lines) - limit, 'more diff line')}\n", style="dim")
    out.no_wrap, out.overflow = True, "ellipsis"
    return out
