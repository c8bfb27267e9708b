"""rich's Console, sized by the terminal even when TERM=dumb.

On a dumb terminal rich assumes 80×25 whatever the screen is, so on a narrower one every
table, answer and tool line came out wider than the screen and wrapped into broken
lines. A dumb terminal still has a size: it is asked, as on any other terminal.
"""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions


class SizedConsole(Console):
    @property
    def size(self) -> ConsoleDimensions:
        if self.is_dumb_terminal and (self._width is None or self._height is None):
            try:
                width, height = os.get_terminal_size(self.file.fileno())
            except (AttributeError, ValueError, OSError):
                return super().size
            return ConsoleDimensions(self._width or width, self._height or height)
        return super().size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size
