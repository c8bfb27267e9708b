"""The undo journal: what each request's file edits replaced, so /undo can put it back.

Before `write_file` or `edit_file` first changes a path during a request, `keep` copies
the path's bytes and permission bits (or notes that it did not exist, and which parent
directories the write will create) into `<folder>/<request>/`; after every write, `wrote`
records a digest of what the tool wrote. `undo` restores the newest request's paths byte
for byte, removes the files (and emptied directories) it created, and deletes that
request's record, so the next `undo` goes one request further back.

A path whose content no longer matches what the tool last wrote (the person, a command or
another program changed it since) makes `undo` refuse, naming it, unless forced. Files
changed by shell commands are not tracked at all. Git is never touched.

The copies are the one thing Swival writes unredacted, since they must restore secrets
too: owner-only (0600 files in 0700 directories), under `.swival/`, which the model's
file tools refuse to read for this folder (see workspace.resolve_read). The record lives
on disk, so a resumed session can still undo what it did before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swival.state import unless_live
from swival.tools.atomic import atomic_write
from swival.tools.regular import NotRegularFile, open_regular
from swival.words import clip

MANIFEST = "manifest.json"
KEPT_SESSIONS = 20  # undo records of other sessions kept; older ones are removed
LABEL_CHARS = 80  # of the request's text, naming it in /undo's reply


@dataclass(frozen=True)
class Undone:
    """What one undo did: `restored` paths got their earlier content back, `removed` were
    created by the request and are gone, `overwritten` (with force only) had changed since
    the agent wrote them and were restored anyway, `failed` could not be put back (the
    request stays on record with just those). `remaining` requests can still be undone."""

    label: str
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    overwritten: tuple[str, ...]
    remaining: int
    failed: tuple[str, ...] = ()  # "name: reason"; kept, so /undo can try them again


@dataclass(frozen=True)
class UndoRefused:
    """Undo did nothing: `changed` paths differ from what the agent last wrote there."""

    label: str
    changed: tuple[str, ...]


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _current(path: Path) -> bytes | None:
    """The bytes at `path` now; None when it is missing or not a regular file."""
    try:
        with open_regular(path) as f:
            return f.read()
    except (OSError, NotRegularFile):  # missing, a directory, a pipe: not what we wrote
        return None


def _changed(record: dict[str, Any]) -> bool:
    """Whether the path no longer holds what the tool last wrote. A file the request
    created that is gone already is not a change /undo would lose."""
    now = _current(Path(record["path"]))
    return _digest(now) != record["after"] and not (record["blob"] is None and now is None)


def _load(path: Path) -> dict[str, Any] | None:
    """A request's manifest with only the paths a write finished on; None when it is
    unreadable or has none (a write that failed after its copy was kept)."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        files = [f for f in manifest["files"] if f["after"] is not None]
        label = str(manifest["label"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {"label": label, "files": files} if files else None


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _save_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


class UndoJournal:
    """One session's undo record, kept in `folder` (`.swival/undo/<session id>`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._label = ""
        self._entry: Path | None = None  # the running request's folder, once it wrote
        self._files: dict[str, dict[str, Any]] = {}

    def begin(self, label: str) -> None:
        """A new request starts; `label` (its text, redacted) names it in /undo's reply."""
        self._label, self._entry, self._files = clip(label, LABEL_CHARS), None, {}

    def keep(self, path: Path, name: str) -> None:
        """Before a tool writes `path` (shown as `name`): keep what it holds, unless this
        request already kept it. Raises OSError when the copy cannot be made; the caller
        then leaves the file alone."""
        key = str(path)
        if key in self._files:
            return
        folder = self._open()
        record: dict[str, Any] = {"path": key, "name": name, "blob": None, "mode": None,
                                  "dirs": [], "after": None}
        if path.exists():
            with open_regular(path) as f:
                data = f.read()
            record["blob"] = f"{len(self._files) + 1}.bin"
            record["mode"] = stat.S_IMODE(path.stat().st_mode)
            _write_private(folder / record["blob"], data)
        else:
            missing = [p for p in path.parents if not p.exists()]
            record["dirs"] = [str(p) for p in missing]  # innermost first
        self._files[key] = record
        self._save()

    def wrote(self, path: Path, data: bytes) -> None:
        """After a tool wrote `data` to `path`: remember what the file should now hold."""
        record = self._files.get(str(path))
        if record is not None:
            record["after"] = _digest(data)
            self._save()

    def undo(self, force: bool = False) -> Undone | UndoRefused | None:
        """Revert the newest recorded request; None when there is nothing to undo. Refuses
        (changing nothing) when a path changed since the agent wrote it, unless `force`."""
        entries = self._entries()
        manifest: dict[str, Any] | None = None
        while entries and manifest is None:  # skip records with no finished write
            entry = entries.pop()
            manifest = _load(entry / MANIFEST)
            if manifest is None:
                shutil.rmtree(entry, ignore_errors=True)
        if manifest is None:
            return None
        entries.append(entry)
        files = manifest["files"]
        changed = tuple(f["name"] for f in files if _changed(f))
        if changed and not force:
            return UndoRefused(manifest["label"], changed)
        done: dict[str, list[str]] = {"restored": [], "removed": []}
        failed: list[dict[str, Any]] = []
        for record in files:
            try:
                done[self._put_back(entry, record)].append(record["name"])
            except OSError as exc:
                failed.append({**record, "why": exc.strerror or str(exc)})
        if failed:
            _save_json(entry / MANIFEST, {**manifest, "files": failed})
        else:
            shutil.rmtree(entry)
        if entry == self._entry:  # undoing the running request: start its record afresh
            self._entry, self._files = None, {}
        return Undone(manifest["label"], tuple(done["restored"]), tuple(done["removed"]),
                      changed, len(entries) - (0 if failed else 1),
                      tuple(f"{f['name']}: {f['why']}" for f in failed))

    def pending(self) -> int:
        """How many requests can be undone."""
        return len(self._entries())

    def prune(self, spills: Path, keep: int = KEPT_SESSIONS) -> None:
        """Remove the undo records of all but the newest `keep` other sessions that are
        not running. A session runs while it holds its spill folder, the one of the same
        name in `spills` (see swival/state/spills.py); that lock is held while a record is
        removed, so a session resumed meanwhile waits and keeps what is left."""
        parent = self.folder.parent
        with contextlib.suppress(OSError):
            others = [p for p in parent.iterdir() if p.name != self.folder.name]
            others.sort(key=lambda p: p.lstat().st_mtime_ns)
            for old in others[:max(0, len(others) - keep)]:
                with unless_live(spills / old.name) as idle:
                    if not idle:
                        continue
                    if old.is_dir() and not old.is_symlink():
                        shutil.rmtree(old, ignore_errors=True)
                    else:
                        old.unlink(missing_ok=True)

    # -- internals ---------------------------------------------------------------------

    def _entries(self) -> list[Path]:
        """Request folders with a manifest, oldest first."""
        if not self.folder.is_dir():
            return []
        found = [p for p in self.folder.iterdir()
                 if p.name.isdigit() and (p / MANIFEST).is_file()]
        return sorted(found, key=lambda p: int(p.name))

    def _open(self) -> Path:
        """The running request's folder, created on its first write."""
        if self._entry is None:
            if any(p.is_symlink() for p in (self.folder.parent.parent, self.folder.parent,
                                            self.folder)):
                raise OSError(f"{self.folder} is behind a symlink")
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            numbers = [int(p.name) for p in self._entries()]
            entry = self.folder / f"{max(numbers, default=0) + 1:06d}"
            entry.mkdir(mode=0o700)
            self._entry = entry
        return self._entry

    def _save(self) -> None:
        assert self._entry is not None
        _save_json(self._entry / MANIFEST, {"label": self._label,
                                             "files": list(self._files.values())})

    @staticmethod
    def _put_back(entry: Path, record: dict[str, Any]) -> str:
        """Restore one path: "restored" when it got its content back, "removed" when the
        request had created it. Raises OSError when that cannot be done."""
        path = Path(record["path"])
        if path.is_dir() and not path.is_symlink():
            raise OSError(f"{record['name']} is now a directory; it was left alone")
        if record["blob"] is not None:
            atomic_write(path, (entry / record["blob"]).read_bytes(), mode=record["mode"])
            return "restored"
        path.unlink(missing_ok=True)
        for folder in map(Path, record["dirs"]):  # innermost first; only emptied ones go
            with contextlib.suppress(OSError):
                folder.rmdir()
        return "removed"
