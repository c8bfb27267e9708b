"""The starter config `--init-config` writes or prints: the keys the user chose, then every
key of the annotated example (package data, `swival/swival.toml.example`) commented out at
its default, so the file itself documents what can be set. Nothing here needs the
repository: pip and pipx installs have the example too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from swival.config import Settings, global_config_path
from swival.errors import ConfigError

EXAMPLE = "swival.toml.example"


def example_text() -> str:
    """The annotated example: every key with its default and a comment."""
    return resources.files("swival").joinpath(EXAMPLE).read_text(encoding="utf-8")


def starter_config(settings: Settings) -> dict[str, Any]:
    """The keys most people set, at their current values (from the command line,
    the environment or the config files already in effect)."""
    data: dict[str, Any] = {"provider": settings.provider}
    for name in ("base_url", "model", "max_context_tokens"):
        value = getattr(settings, name)
        if value is not None:
            data[name] = value
    data["max_output_tokens"] = settings.max_output_tokens
    data["commands"] = settings.commands
    return data


def starter_text(settings: Settings) -> str:
    """The whole starter file: the chosen keys set, every key documented below them."""
    example = "".join(line if not line.strip() or line.startswith("#") else "# " + line
                      for line in example_text().splitlines(keepends=True))
    return ("# Swival configuration, from `swival --init-config`. The keys below are set;\n"
            "# after them comes every key Swival knows, commented out at its default, with\n"
            "# what it does: remove the `# ` before one to set it.\n\n"
            + tomli_w.dumps(starter_config(settings)) + "\n" + example)


def write_starter_config(settings: Settings, *, global_: bool,
                         env: Mapping[str, str] | None = None) -> Path:
    """Write a starter config (never overwriting one) and return its path: the project's
    `swival.toml`, or with `global_` the user's global config file."""
    env = os.environ if env is None else env
    path = global_config_path(env) if global_ else settings.project_root / "swival.toml"
    if path.exists():
        raise ConfigError(f"{path} already exists; edit it or remove it first.")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(starter_text(settings), encoding="utf-8")
    return path
