"""run_command: run a shell command in the project root, after the command policy agrees."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Mapping
from typing import Any, BinaryIO

from swival.messages import ToolResult
from swival.state import spill_stream
from swival.tools.approval import person_words
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.output import make_preview, strip_ansi
from swival.tools.process import Outcome, run_in_group, shell
from swival.tools.workspace import display

INLINE_BYTES = 10_240
HEAD_BYTES = 2_000
TAIL_BYTES = 4_000
MAX_TIMEOUT = 3600.0
PAGE_LINES = 200


class RunCommand:
    """Run `command` with `/bin/sh -c` semantics (bash when present). Output over 10 KB is
    saved under `.swival/out/` and the model gets its head and tail plus the file's path."""

    read_only = False
    spec = ToolSpec(
        name="run_command",
        description="Run a shell command in the project root.",
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer", "description": "seconds"},
            },
            "required": ["command"],
        },
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        command = args["command"]
        if not command.strip():
            raise ToolError("command is empty; give a shell command to run.")
        given = args.get("timeout")
        timeout = float(ctx.command_timeout if given is None else given)
        ceiling = max(MAX_TIMEOUT, ctx.command_timeout)
        if not 0 < timeout <= ceiling:
            raise ToolError(f"timeout must be between 1 and {ceiling:g} seconds.")
        meta: dict[str, Any] = {"kind": "command", "command": command}
        reason = ctx.sandbox.refusal() or ctx.approve(command)
        if reason is not None:
            meta["refused"], meta["summary"] = True, person_words(reason)
            return ToolResult(f"command refused: {reason}", is_error=True, meta=meta)
        with tempfile.TemporaryFile() as out:
            try:
                with ctx.sandbox.launch([shell(), "-c", command], ctx.mounts,
                                        os.environ) as launch:
                    outcome = launch.outcome(
                        run_in_group(launch.argv, ctx.root, timeout, out, launch.env))
            except OSError as exc:
                return ToolResult(
                    f"command could not start: {exc.strerror or exc}", is_error=True, meta=meta
                )
            text, spill_path, lines = _shape_output(ctx, out)
        if spill_path:
            meta["spill_path"] = spill_path
        if lines is not None:  # only head and tail are in `text`: how many of how many
            meta["preview_lines"], meta["output_lines"] = lines
        meta["exit_code"] = outcome.exit_code
        note = ctx.sandbox.explain(text, ctx.mounts)
        return ToolResult(text + _ending(outcome, timeout) + (f"\n{note}" if note else ""),
                          is_error=outcome.timed_out, meta=meta)


def _ending(outcome: Outcome, timeout: float) -> str:
    if outcome.timed_out:
        return (f"[timed out after {timeout:g} s; the command and its child processes were "
                "killed. If it needs longer, call run_command again with a larger timeout "
                "(seconds), or run it in smaller steps.]")
    code = outcome.exit_code or 0
    if code < 0:
        try:
            return f"[killed by signal {signal.Signals(-code).name}]"
        except ValueError:
            return f"[killed by signal {-code}]"
    return f"[exit code {code}]"


def _clean(text: str) -> str:
    """Output without colour codes, and progress-bar redraws reduced to the last one."""
    text = strip_ansi(text)
    if "\r" in text:
        text = "\n".join(
            line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n")
        )
    return text


def _newline(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


def _shape_output(ctx: ToolContext, raw: BinaryIO
                  ) -> tuple[str, str | None, tuple[int, int] | None]:
    """The text the model sees (inline, or a head+tail preview), the spill file path, and
    for a preview the output lines it holds and the output's lines.
    Secrets are redacted from the whole output before any of it is cut, so no cut can
    show half a secret."""
    size = raw.seek(0, 2)
    if size <= INLINE_BYTES:
        raw.seek(0)
        text = _clean(raw.read().decode("utf-8", errors="replace"))
        return _newline(ctx.redactor.redact(text)), None, None
    with tempfile.TemporaryFile() as scratch:
        source, spill_path, failure = _save(ctx, raw, scratch)
        with source:
            preview = make_preview(source, HEAD_BYTES, TAIL_BYTES)
    first_hidden, last_hidden = preview.head_lines + 1, preview.tail_from - 1
    gap = f"lines {first_hidden}-{last_hidden} of {preview.total_lines} not shown"
    if spill_path is None:
        note = (f"[… {gap}; the full output ({size} bytes) could not be saved: {failure}]")
    else:
        note = (f"[… {gap}. Full output ({preview.total_bytes} bytes) saved to {spill_path}; "
                f"read it with read_file file_path=\"{spill_path}\" offset={first_hidden} "
                f"limit={PAGE_LINES}]")
    head, tail = _newline(_clean(preview.head)), _clean(preview.tail)
    tail = tail if tail.endswith("\n") else tail + "\n"
    shown = preview.head_lines + preview.total_lines - preview.tail_from + 1
    return f"{head}{note}\n{tail}", spill_path, (shown, preview.total_lines)


def _save(ctx: ToolContext, raw: BinaryIO, scratch: BinaryIO,
          ) -> tuple[BinaryIO, str | None, str | None]:
    """Copy the output, redacted, to a spill file; when that fails, to `scratch`.
    Returns the redacted copy (open, for the preview), the spill file's path as the
    model should give it, and why saving failed."""
    try:
        path = spill_stream(raw, ctx.spill_dir, "cmd", ctx.redactor)
        return path.open("rb"), display(ctx, path.resolve()), None
    except OSError as exc:
        failure = exc.strerror or str(exc)
    raw.seek(0)
    with contextlib.suppress(OSError):  # a full disk: preview what was copied (redacted)
        ctx.redactor.copy(raw, scratch)
    return scratch, None, failure
