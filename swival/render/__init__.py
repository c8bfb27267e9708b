"""The only code that formats output for people (rich). Fed by agent events.

Two consumers: one-shot mode uses `ProgressPrinter` (pipe.py: a line per tool call on
stderr, never wrapped or cut without a terminal); the REPL uses `TurnView` (view.py:
spinners, streamed text, markdown answers, tool lines, diffs; its live region in
live.py) and `Status` (status.py: the figures of the bottom toolbar and the live status
line). lines.py words tool calls, compactions and diffs for both; asking.py the approval
questions both ask; replay.py shows a resumed conversation. rich honours `NO_COLOR`
itself; widths are read from the console on every line so narrow terminals get shorter
lines rather than wrapped ones.
"""

from swival.render.lines import diff_text, key_argument, outcome, screen_text, tool_line
from swival.render.pipe import ProgressPrinter, say, stderr_console
from swival.render.status import Status
from swival.render.view import TurnView, make_console, preload

__all__ = ["ProgressPrinter", "Status", "TurnView", "diff_text", "key_argument",
           "make_console", "outcome", "preload", "say", "screen_text", "stderr_console",
           "tool_line"]
