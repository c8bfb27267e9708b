"""One configured MCP server, as the client needs it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from swival.config import Settings

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 120.0


@dataclass(frozen=True)
class ServerSpec:
    """A server started with `command` (stdio) or reached at `url` (streamable HTTP).

    `env` is added to the few variables a stdio server inherits (HOME, PATH, ...; never
    the user's secrets); `headers` go with every HTTP request. Both hold secrets.
    `trusted`: the user's own config says its tools may run without asking.
    `startup_timeout` bounds connecting and listing tools; `call_timeout` one call."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    trusted: bool = False
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    @property
    def target(self) -> str:
        """Where it runs, for a person (no secrets: those are in env and headers)."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()

    def secrets(self) -> dict[str, str]:
        """The values that must never be shown or written, by name: env and header
        values, named as config.secrets.mcp_secrets names them."""
        return {f"mcp_servers.{self.name}.{part}.{key}": value
                for part, values in (("env", self.env), ("headers", self.headers))
                for key, value in values.items()}


def specs_from(settings: Settings) -> tuple[list[ServerSpec], list[str]]:
    """The enabled servers of `settings.mcp_servers` (none with `mcp = false`), and
    notices for a person. `trust = true` counts only from the user's own config files:
    in a project's swival.toml it is ignored, and the notice says so."""
    if not settings.mcp:
        return [], []
    specs, notices = [], []
    for name, entry in settings.mcp_servers.items():
        if not entry.get("enabled", True):
            continue
        from_project = settings.sources.get(f"mcp_servers.{name}") == str(settings.project_file)
        trusted = bool(entry.get("trust")) and not from_project
        if entry.get("trust") and from_project:
            notices.append(f"{settings.project_file} marks MCP server {name} `trust = true`; "
                           "only your global config can do that, so its tools will ask "
                           "first.")
        cwd = entry.get("cwd")
        specs.append(ServerSpec(
            name, command=entry.get("command"), args=tuple(entry.get("args") or ()),
            env=dict(entry.get("env") or {}),
            cwd=(settings.project_root / Path(cwd).expanduser()) if cwd else
            settings.project_root, url=entry.get("url"),
            headers=dict(entry.get("headers") or {}), trusted=trusted,
            startup_timeout=float(entry.get("startup_timeout", DEFAULT_STARTUP_TIMEOUT)),
            call_timeout=float(entry.get("timeout", DEFAULT_CALL_TIMEOUT))))
    return specs, notices
