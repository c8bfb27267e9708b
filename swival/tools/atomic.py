"""Atomic file replacement, shared by the file tools and by /undo's restore.

The new content goes to a temporary file in the same directory, is flushed to disk, then
renamed over the target, so a crash leaves the old file or the new one, never half of
each.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def _umask() -> int:
    # Read without changing it where Linux allows; the fallback sets and restores it.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, content: str | bytes, mode: int | None = None) -> bool:
    """Write `content` (text as UTF-8) to `path` atomically; return True if the file was
    created.

    The permission bits are `mode` when given, else the existing file's, else 0666 minus
    the umask (as any editor creates files). Parent directories are created. On any
    failure the temporary file is removed and the original file is left untouched.
    """
    data = content.encode("utf-8") if isinstance(content, str) else content
    created = not path.exists()
    if mode is None:
        mode = 0o666 & ~_umask() if created else stat.S_IMODE(path.stat().st_mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return created
