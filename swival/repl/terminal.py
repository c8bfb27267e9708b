"""The REPL's hold on the terminal: the prompt's output, and the keyboard during a turn.

prompt_toolkit draws a bottom toolbar only once it knows how many rows lie below the
cursor, which it learns by asking the terminal for the cursor's position. Some terminals
(and test harnesses) never answer, and prompt_toolkit then waits and warns mid-session,
so the REPL does not ask (PROMPT_TOOLKIT_NO_CPR). Its output instead says the height is
known: the prompt is then as tall as what it draws, and the toolbar sits right under the
input line.

During a turn the keyboard is not echoed: keys typed while the model works would
otherwise be printed into the middle of the output. They stay queued for the next
prompt (type-ahead), except before an approval question, where they are dropped so that
nothing typed earlier can answer it. Ctrl-C still interrupts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from prompt_toolkit.output import ColorDepth, Output, create_output
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.utils import get_bell_environment_variable, get_term_environment_variable

try:
    import termios
except ImportError:  # Windows: no terminal attributes to change
    termios = None  # type: ignore[assignment]


class KnownHeightOutput(Vt100_Output):
    """A terminal output that answers "rows below the cursor" itself (one: the prompt's
    own line), so prompt_toolkit draws the bottom toolbar without asking the terminal."""

    def get_rows_below_cursor_position(self) -> int:
        return 1


def prompt_output() -> Output:
    """The output for the REPL's prompts: a KnownHeightOutput on a POSIX terminal, else
    what prompt_toolkit picks."""
    if sys.platform == "win32" or not sys.stdout.isatty():
        return create_output()
    return KnownHeightOutput.from_pty(sys.stdout, term=get_term_environment_variable(),
                                      default_color_depth=ColorDepth.from_env(),
                                      enable_bell=get_bell_environment_variable())


def _terminal_fd(stream: TextIO) -> int | None:
    if termios is None:
        return None
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None
    return fd if os.isatty(fd) else None


@contextmanager
def keys_unechoed(stream: TextIO | None = None) -> Iterator[None]:
    """While inside: keys typed on the terminal `stream` (default stdin) are neither
    echoed nor line-edited; its settings come back afterwards. Not a terminal: no-op."""
    fd = _terminal_fd(stream or sys.stdin)
    if fd is None:
        yield
        return
    saved = termios.tcgetattr(fd)
    quiet = [*saved[:3], saved[3] & ~(termios.ECHO | termios.ICANON), *saved[4:6],
             list(saved[6])]
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def drop_type_ahead(stream: TextIO | None = None) -> None:
    """Discard keys typed but not yet read (before a question that must be answered
    fresh). Not a terminal: no-op."""
    fd = _terminal_fd(stream or sys.stdin)
    if fd is not None:
        termios.tcflush(fd, termios.TCIFLUSH)
