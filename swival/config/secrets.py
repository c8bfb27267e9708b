"""The secrets a session must never show: named by environment variables, the configured
API key and the MCP servers' `env` and `headers`; the redactor built from them, and the
warning for a literal API key in a project file."""

from __future__ import annotations

import re
from collections.abc import Mapping

from swival.config.keys import Settings
from swival.redaction import MIN_SECRET, Redactor

SECRET_NAME = re.compile(r"_API_KEY$|_TOKEN$|_SECRET|_PASSWORD$")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret: `*_API_KEY`,
    `*_TOKEN`, `*_SECRET*`, `*_PASSWORD` (any case)."""
    return SECRET_NAME.search(name.upper()) is not None


def named_secrets(settings: Settings | None, env: Mapping[str, str]) -> dict[str, str]:
    """Values that must never be shown, by name: every environment variable whose name
    marks it as a secret (see `is_secret_name`), the configured API key as `api_key`
    when no such variable holds the same value, and the MCP servers' `env` and `headers`
    values (`mcp_secrets`)."""
    found = {k: v for k, v in env.items() if is_secret_name(k) and v}
    if settings is not None and settings.api_key and settings.api_key not in found.values():
        found["api_key"] = settings.api_key
    if settings is not None:
        found.update(mcp_secrets(settings))
    return found


def mcp_secrets(settings: Settings) -> dict[str, str]:
    """The values of the MCP servers' `env` and `headers`, named like
    `mcp_servers.github.env.GITHUB_TOKEN`; only those of MIN_SECRET characters or more
    (hiding `DEBUG = "1"` everywhere would garble text, and it is no secret)."""
    return {f"mcp_servers.{server}.{part}.{name}": value
            for server, entry in settings.mcp_servers.items() for part in ("env", "headers")
            for name, value in (entry.get(part) or {}).items() if len(value) >= MIN_SECRET}


def known_secrets(settings: Settings | None, env: Mapping[str, str]) -> tuple[str, ...]:
    """The values of `named_secrets`, longest first."""
    return tuple(sorted(set(named_secrets(settings, env).values()), key=len, reverse=True))


def redactor_for(settings: Settings | None, env: Mapping[str, str]) -> Redactor:
    """The redactor for `named_secrets` (see swival/redaction.py)."""
    return Redactor.of(named_secrets(settings, env))


def literal_key_warning(settings: Settings) -> str | None:
    """A warning when a project file inside a git repository holds a literal API key,
    whether or not the project is trusted (the file is easy to commit either way)."""
    project_file = settings.project_file
    in_file = settings.sources.get("api_key") == str(project_file) or "api_key" in \
        settings.held_back
    if in_file and (settings.project_root / ".git").exists():
        return (
            f"{project_file} holds a literal api_key inside a git repository, where it is easy "
            "to commit by mistake. Move it to the provider's environment variable (for example "
            "OPENAI_API_KEY) or to the global config file."
        )
    return None
