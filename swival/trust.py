"""Project trust: which repositories' `swival.toml` keys the user has agreed to apply.

A project file may set keys that run programs, widen what the agent can touch or send
code elsewhere (`Key.trusted_only` in config/keys.py). They apply only when the user trusts
the project, and the record of that trust lives where a repository cannot write: the
JSON file `trusted-projects.json` in the user's state directory. Each entry is keyed by
the project file's path (its directory resolved) and holds one SHA-256 digest per trusted key
(of its name and value), never the value itself, so an API key is not copied there and
a changed or added key is noticed and asked about again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swival.config import KEYS_BY_NAME, Settings, public_value, user_state_dir
from swival.errors import ConfigError

STORE_NAME = "trusted-projects.json"
WHAT_THEY_DO = ("Such keys can run commands without asking, reach files outside the project "
                "or send your code to another server.")


def _entry_name(project_file: Path) -> str:
    """The project's resolved directory and the file's own name. The file itself is not
    resolved: a repository whose `swival.toml` is a symlink to a trusted project's file
    must not inherit that project's trust."""
    return str(project_file.parent.resolve() / project_file.name)


def digest(name: str, value: Any) -> str:
    """A stable fingerprint of one key as written."""
    text = json.dumps([name, value], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TrustStore:
    """The trust record at `path`: `{"projects": {path: {"keys": {name: digest}, ...}}}`."""

    path: Path

    @classmethod
    def for_user(cls, env: Mapping[str, str]) -> TrustStore:
        return cls(user_state_dir(env) / STORE_NAME)

    def _projects(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{self.path}: cannot read the record of trusted projects ({exc}). Fix it or "
                "delete it (every project will then be asked about again)."
            ) from None
        projects = data.get("projects") if isinstance(data, dict) else None
        if not isinstance(projects, dict):
            raise ConfigError(f"{self.path}: not a record of trusted projects. Delete it "
                              "(every project will then be asked about again).")
        return projects

    def recorded(self, project_file: Path) -> dict[str, str] | None:
        """The digests trusted for `project_file`, or None when it was never trusted."""
        entry = self._projects().get(_entry_name(project_file))
        keys = entry.get("keys") if isinstance(entry, dict) else None
        return dict(keys) if isinstance(keys, dict) else None

    def check(self, project_file: Path, keys: Mapping[str, Any]) -> bool:
        """Whether the user trusted `project_file` with exactly these values of `keys`.
        Matches `swival.config.TrustCheck`."""
        return not self.changes(project_file, keys)

    def changes(self, project_file: Path, keys: Mapping[str, Any]) -> dict[str, str]:
        """Each key not covered by the recorded trust: "added" (never trusted) or
        "changed" (trusted with another value). Empty when all are trusted."""
        known = self.recorded(project_file) or {}
        return {name: "changed" if name in known else "added" for name, value in keys.items()
                if known.get(name) != digest(name, value)}

    def record(self, project_file: Path, keys: Mapping[str, Any]) -> None:
        """Trust these values of `keys` for `project_file` from now on (written atomically,
        readable by the user alone). Raises ConfigError when the record cannot be written."""
        projects = self._projects()
        known = self.recorded(project_file) or {}
        known.update({key: digest(key, value) for key, value in keys.items()})
        projects[_entry_name(project_file)] = {
            "keys": known, "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self._write(projects)

    def forget(self, project_file: Path) -> bool:
        """Stop trusting `project_file`; False when it was not trusted."""
        projects = self._projects()
        if projects.pop(_entry_name(project_file), None) is None:
            return False
        self._write(projects)
        return True

    def _write(self, projects: dict[str, Any]) -> None:
        text = json.dumps({"version": 1, "projects": projects}, indent=2, sort_keys=True)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".trust-", suffix=".tmp")
        except OSError as exc:
            raise ConfigError(f"could not record trust in {self.path}: {exc.strerror}.") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:  # mkstemp made it mode 0600
                out.write(text + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except OSError as exc:
            Path(temp).unlink(missing_ok=True)
            raise ConfigError(f"could not record trust in {self.path}: {exc.strerror}.") from None


def shown(name: str, value: Any) -> str:
    """One key as a person reads it in a question, close to how TOML writes it (JSON
    agrees with TOML for strings, numbers, booleans and arrays), with secrets hidden."""
    key = KEYS_BY_NAME.get(name)
    if key is not None and key.secret:
        return f"{name} = (a secret, not shown)"
    if key is not None:
        value = public_value(key, value)
    return f"{name} = {json.dumps(value, ensure_ascii=False)}"


def _changed_text(changes: Mapping[str, str]) -> str:
    return ", ".join(f"{name} {what}" for name, what in changes.items())


def ignored_notice(settings: Settings, store: TrustStore) -> str | None:
    """What a run that does not ask says about the project keys it ignored, or None."""
    held = settings.held_back
    if not held:
        return None
    file = settings.project_file
    names = ", ".join(held)
    if store.recorded(file) is not None:
        head = (f"{file} changed since you trusted it ({_changed_text(store.changes(file, held))})"
                f"; ignoring its keys that need trust: {names}.")
    else:
        head = f"{file} sets keys Swival applies only in projects you trust; ignoring {names}."
    return (f"{head} To apply them, run again with --trust (Swival then remembers this "
            "project until the file changes).")


def question(settings: Settings, store: TrustStore) -> str:
    """The start-up question of an interactive session, without its answer line."""
    held = settings.held_back
    file = settings.project_file
    lines = []
    if store.recorded(file) is not None:
        lines.append(f"{file} changed since you trusted it "
                     f"({_changed_text(store.changes(file, held))}).")
    lines.append(f"{file} sets keys that Swival applies only in projects you trust:")
    lines += [f"    {shown(name, value)}" for name, value in held.items()]
    lines.append(WHAT_THEY_DO)
    return "\n".join(lines)
