"""Loading the settings: the sources in order of precedence (defaults, the global file,
the project's `swival.toml`, `SWIVAL_*` variables, the command line), each a layer of
checked values, merged; and which keys of the project file wait for the user's trust."""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from swival.config.keys import KEYS, KEYS_BY_NAME, Settings
from swival.config.values import coerce, default_of, env_written, from_env_text
from swival.errors import ConfigError

# Asked with the project file and the keys it would hold back: may they apply after all?
TrustCheck = Callable[[Path, Mapping[str, Any]], bool]


def find_project_root(start: Path) -> Path:
    """The enclosing git work tree's root, else `start` itself."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def global_config_path(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "swival" / "config.toml"


def user_state_dir(env: Mapping[str, str]) -> Path:
    """Where Swival keeps what belongs to the user rather than to a project (trusted
    projects, the index of recorded sessions): `$XDG_STATE_HOME/swival`, by default
    `~/.local/state/swival`. A repository cannot ship files here."""
    base = env.get("XDG_STATE_HOME") or str(
        Path(env.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(base) / "swival"


EXAMPLE_HINT = "`swival --init-config stdout` prints every key with its meaning."


def read_toml(path: Path) -> dict[str, Any]:
    """Parse and validate one config file; returns the keys it sets. Every problem in
    the file is reported in one ConfigError."""
    values, problems = _parse_toml(path)
    if problems:
        raise ConfigError("\n".join(problems))
    return values


def _parse_toml(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The valid keys of one config file, and a line for each problem in it."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        return {}, [f"{path}: not valid TOML ({exc}). Fix the file or remove it."]
    except OSError as exc:
        return {}, [f"{path}: cannot read it ({exc.strerror})."]
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in data.items():
        key = KEYS_BY_NAME.get(name)
        if key is None:
            hint = difflib.get_close_matches(name, KEYS_BY_NAME, n=1)
            tip = (f"Did you mean `{hint[0]}`?" if hint
                   else f"Known keys: {', '.join(KEYS_BY_NAME)}.")
            problems.append(f"{path}: unknown key `{name}`. {tip} {EXAMPLE_HINT}")
            continue
        try:
            out[name] = coerce(key, value, str(path))
        except ConfigError as error:
            problems.append(str(error))
    return out, problems


Layer = dict[str, tuple[Any, str]]  # key -> (value, where it came from)


def _with_json_alias(layer: Layer) -> Layer:
    """`json` is `output_format` "json" (false: "text") in the layer that sets it, unless
    the same layer sets `output_format`, which then wins."""
    if "json" in layer and "output_format" not in layer:
        value, origin = layer["json"]
        layer["output_format"] = ("json" if value else "text", origin)
    return layer


def _file_layer(path: Path, problems: list[str]) -> Layer:
    values, found = _parse_toml(path)
    problems += found
    return _with_json_alias({name: (value, str(path)) for name, value in values.items()})


def _env_layer(env: Mapping[str, str], problems: list[str]) -> Layer:
    layer: Layer = {}
    for key in KEYS:
        var = "SWIVAL_" + key.name.upper()
        if var in env and key.type is not dict:
            origin = f"environment variable {var}"
            try:
                value = from_env_text(key, env[var], origin)
                layer[key.name] = (coerce(key, value, origin, env_written(key, env[var])),
                                   origin)
            except ConfigError as error:
                problems.append(str(error))
    return _with_json_alias(layer)


def _cli_layer(cli: Mapping[str, Any], problems: list[str]) -> Layer:
    layer: Layer = {}
    for name, value in cli.items():
        if value is None:
            continue
        value = list(value) if isinstance(value, tuple) else value
        try:
            # the parser turned a number such as `7` into 7.0: shown as it was typed
            written = (str(int(value)) if isinstance(value, float) and value.is_integer()
                       else None)
            layer[name] = (coerce(KEYS_BY_NAME[name], value,
                                  f"option --{name.replace('_', '-')}", written),
                           "command line")
        except ConfigError as error:
            problems.append(str(error))
    return _with_json_alias(layer)


def _cross_problems(merged: Layer) -> list[str]:
    """Rules between keys: compaction must bring the prompt below where it starts."""
    trigger, target = (merged.get(name, (default_of(KEYS_BY_NAME[name]), "the default"))
                       for name in ("compaction_trigger", "compaction_target"))
    if target[0] < trigger[0]:
        return []
    return [f"`compaction_target` ({target[0]:g}, from {target[1]}) must be below "
            f"`compaction_trigger` ({trigger[0]:g}, from {trigger[1]}): compaction starts at "
            "the trigger and brings the prompt down to the target."]


def _merge(*layers: Layer) -> tuple[Layer, dict[str, str]]:
    """Later layers win key by key, except tables, which merge entry by entry. Also
    returns where each table entry came from ("mcp_servers.NAME" -> origin)."""
    merged: Layer = {}
    entries: dict[str, str] = {}
    for layer in layers:
        for name, (value, origin) in layer.items():
            if KEYS_BY_NAME[name].fields:
                entries.update({f"{name}.{entry}": origin for entry in value})
                value = {**merged.get(name, ({}, ""))[0], **value}
            merged[name] = (value, origin)
    return merged, entries


def _values(*layers: Layer) -> dict[str, Any]:
    return {name: value for layer in layers for name, (value, _) in layer.items()}


def needing_trust(project: Layer, below: Layer, above: Layer) -> dict[str, Any]:
    """The keys of the project file's `project` layer (name -> value as written) that need
    trust: trusted-only keys that no layer `above` it (environment, command line)
    overrides, whose value is looser than the one the run would use without the project
    file (`below`, the user's own files, else the default). A key whose looseness
    depends on others (a model string is hosted unless a base_url is set) is judged with
    every key held back left out, until nothing more is held back."""
    kept = {k: v for k, (v, _) in project.items() if k not in above}
    users = {**{k.name: default_of(k) for k in KEYS}, **_values(below)}
    held: dict[str, Any] = {}
    while True:
        would_use = {**_values(below), **{k: v for k, v in kept.items() if k not in held},
                     **_values(above)}
        more = {k: v for k, v in kept.items() if k not in held
                and KEYS_BY_NAME[k].needs_trust(v, users[k], would_use)}
        if not more:
            return held
        held.update(more)


def load_settings(
    cli: Mapping[str, Any],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
    trusted: TrustCheck | None = None,
) -> Settings:
    """Merge defaults < global file < project file (or `config_path`) < env < `cli`.

    `cli` holds only the options the user actually gave (None means not given). The
    project's own `swival.toml` keys that need trust (see `needing_trust`) apply only when
    `trusted(project_file, those keys)` says so; without `trusted` they never do. A file
    named by `config_path` is the user's choice and always applies.
    """
    env = os.environ if env is None else env
    root = find_project_root(cwd or Path.cwd())
    if config_path is not None and not config_path.is_file():
        raise ConfigError(f"{config_path}: no such config file.")
    project_file = root / "swival.toml"
    own = [path for path in (global_config_path(env), config_path) if path and path.is_file()]
    untrusted = [project_file] if config_path is None and project_file.is_file() else []
    problems: list[str] = []  # every problem of every source, reported at once
    users = [_file_layer(path, problems) for path in own]
    below, _ = _merge(*users)
    project = _file_layer(untrusted[0], problems) if untrusted else {}
    above = {**_env_layer(env, problems), **_cli_layer(cli, problems)}
    powers = needing_trust(project, below, above)
    applied = bool(powers) and trusted is not None and trusted(project_file, powers)
    held = {} if applied else powers
    merged, entries = _merge(*users, {k: v for k, v in project.items() if k not in held},
                             above)
    if not any("`compaction_t" in problem for problem in problems):
        problems += _cross_problems(merged)  # judged on values that are valid alone
    if problems:
        raise ConfigError("\n".join(problems))
    known = {f.name for f in fields(Settings)}
    return Settings(
        **{k: v for k, (v, _) in merged.items() if k in known},
        project_root=root,
        config_files=(*own, *untrusted),
        sources={**{k: origin for k, (_, origin) in merged.items()}, **entries},
        trust_keys=powers,
        project_trusted=applied,
    )


def requested_output_format(cli: Mapping[str, Any], *, cwd: Path | None = None,
                            env: Mapping[str, str] | None = None,
                            config_path: Path | None = None) -> str:
    """The `output_format` the sources ask for (`cli` holds `output_format` and `json`
    as given, None when not), read leniently: a source that cannot be read and values
    that are not valid are passed over. For reporting a failure to load the settings in
    the format the user asked for."""
    env = os.environ if env is None else env
    project = config_path or find_project_root(cwd or Path.cwd()) / "swival.toml"
    layers = [_file_layer(path, []) for path in (global_config_path(env), project)
              if path.is_file()]
    layers += [_env_layer(env, []), _cli_layer(cli, [])]
    merged, _ = _merge(*layers)
    return str(merged.get("output_format", ("text", ""))[0])
