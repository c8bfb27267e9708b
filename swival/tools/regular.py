"""Regular files only: named pipes, sockets and devices are never opened for reading.

Opening a named pipe (FIFO) for reading waits until another process opens it for writing,
which may be never; reading a device such as /dev/zero never ends. So the file tools ask
what a path is before they touch it (`special_kind`), and open files with O_NONBLOCK and
check the open descriptor again (`open_regular`), so a file swapped for a pipe between the
check and the open is refused too, and the open itself cannot block.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(
    os, "O_CLOEXEC", 0)


class NotRegularFile(Exception):
    """The path is not a regular file; `kind` says what it is ("a named pipe (FIFO)"...)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def kind_of(mode: int) -> str | None:
    """None for a regular file or a directory, else what the file is, for messages."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _KINDS.get(stat.S_IFMT(mode), "a special file")


def special_kind(path: Path) -> str | None:
    """What `path` (symlinks followed) is when it exists and is neither a regular file nor
    a directory; None otherwise."""
    try:
        return kind_of(path.stat().st_mode)
    except (OSError, ValueError):
        return None


def open_regular(path: Path) -> BinaryIO:
    """Open `path` for binary reading without blocking. Raises NotRegularFile when it is
    not a regular file (a directory included), OSError when it cannot be opened."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(kind_of(mode) or "a directory")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def not_regular_message(name: str, kind: str, tool: str) -> str:
    """The model-facing refusal for a special file."""
    return (f"{name} is {kind}, not a regular file; {tool} only works on regular files, "
            "so it was left alone. If you really need it, use run_command, which has a "
            "timeout.")
