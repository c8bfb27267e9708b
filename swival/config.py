"""Settings: one flat table of keys, loaded from defaults, the global config, the
project's `swival.toml`, `SWIVAL_*` environment variables and the command line,
in increasing order of precedence.

Every key is validated: an unknown key, a value of the wrong type or out of range, or
keys that contradict each other raise `ConfigError` naming the source, the key and what
was expected; every problem of every source is reported in that one error.

The project's `swival.toml` is the one source the user did not write: its keys marked
`trusted_only` apply only when the caller's `trusted` check allows them (project trust).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from swival import looseness
from swival.errors import ConfigError
from swival.looseness import NoLooser
from swival.redaction import MIN_SECRET, Redactor

PROVIDERS = ("lmstudio", "ollama", "llamacpp", "generic")
OUTPUT_FORMATS = ("text", "json", "stream-json")
HOSTED_PREFIXES = (
    "openai", "openrouter", "anthropic", "gemini", "groq", "mistral", "deepseek", "xai",
    "together_ai", "fireworks_ai", "cohere", "perplexity", "cerebras", "azure", "bedrock",
    "vertex_ai",
)

# Asked with the project file and the keys it would hold back: may they apply after all?
TrustCheck = Callable[[Path, Mapping[str, Any]], bool]


def selects_hosted(provider: str | None, base_url: str | None, model: str | None) -> bool:
    """Whether these choices send requests to a hosted provider through a litellm model
    string. `provider` is None when nobody chose one (the default, lmstudio): then the
    `openai/` prefix stays local, because LM Studio model keys such as `openai/gpt-oss-20b`
    use it too."""
    if base_url or not model or "/" not in model:
        return False
    prefix = model.split("/", 1)[0]
    if provider == "generic":
        return prefix in HOSTED_PREFIXES
    return provider is None and prefix in HOSTED_PREFIXES[1:]


def _stays_local(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
    """A model or provider is no looser as long as the run does not reach a hosted one."""
    return not selects_hosted(values.get("provider"), values.get("base_url"),
                              values.get("model"))


@dataclass(frozen=True)
class Key:
    """One setting: its type (`str`, `int`, `float`, `bool`, `list`), default and help.

    `trusted_only` marks a key a project file may set only in a trusted project, unless
    the project's value is no looser than the one the run would use without the project
    file (the user's own files, else the default): the same value, or one that `safer`
    accepts (swival/looseness.py: `edits = "ask"` where the user has "auto", `sandbox =
    "on"`, a shorter `add_dir`). A looser value is held back whole before any merging, so
    a marked table cannot add to or replace the user's own entries of the same name.
    `secret` keys are never shown in clear.

    `type` dict: a map of strings (`env`), or, with `fields`, a table of named entries
    (`[mcp_servers.NAME]`), each checked against those fields and completed with their
    defaults; `check` adds an entry's own rules (problems as text). Tables merge entry by
    entry across files."""

    name: str
    type: type
    default: Any
    help: str
    optional: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    trusted_only: bool = False
    safer: NoLooser | None = None
    secret: bool = False
    fields: tuple[Key, ...] = ()
    check: Callable[[Mapping[str, Any]], list[str]] | None = None

    def needs_trust(self, value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
        """Whether a project file setting this key to `value` needs the user's trust,
        where the run would otherwise use `baseline` and would use `values` in all."""
        if not self.trusted_only or value == baseline:
            return False
        return not (self.safer is not None and self.safer(value, baseline, values))


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TABLE_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$")


def _mcp_server_problems(entry: Mapping[str, Any]) -> list[str]:
    """An MCP server runs a `command` (stdio) or is reached at a `url` (HTTP)."""
    command, url = entry.get("command"), entry.get("url")
    if bool(command) == bool(url):
        return ["set either `command` (a program that speaks MCP on stdin and stdout) or "
                "`url` (a streamable HTTP endpoint)" + (", not both." if command else ".")]
    problems = []
    if url and not str(url).startswith(("http://", "https://")):
        problems.append(f"`url` must start with http:// or https://, got {url!r}.")
    misplaced = [f"`{k}`" for k in (("headers",) if command else ("args", "env", "cwd"))
                 if entry.get(k)]
    if misplaced:
        problems.append(f"{', '.join(misplaced)} do not apply to a server with a "
                        f"`{'command' if command else 'url'}`.")
    bad = [name for name in entry.get("env") or {} if not ENV_NAME.match(name)]
    if bad:
        problems.append(f"`env` names must be variable names, got {', '.join(map(repr, bad))}.")
    return problems


MCP_SERVER_FIELDS = (
    Key("command", str, None, "Program serving MCP on stdin/stdout", True),
    Key("args", list, [], "Its arguments"),
    Key("env", dict, {}, "Variables added to its environment", secret=True),
    Key("cwd", str, None, "Directory it starts in (default: the project root)", True),
    Key("url", str, None, "Streamable HTTP endpoint", True),
    Key("headers", dict, {}, "Headers sent with every request", secret=True),
    Key("enabled", bool, True, "false keeps it configured but off"),
    Key("trust", bool, False, "Its tools run without asking (global config only)"),
    Key("startup_timeout", float, 30.0, "Seconds to connect and list its tools", minimum=1),
    Key("timeout", float, 120.0, "Seconds one tool call may take", minimum=1),
)

KEYS: tuple[Key, ...] = (
    Key("provider", str, "lmstudio", "Model server kind", choices=PROVIDERS,
        trusted_only=True, safer=_stays_local),
    Key("base_url", str, None, "Server URL (root or /v1); default depends on provider", True,
        trusted_only=True),
    Key("model", str, None, "Model name; default: the model the server has loaded", True,
        trusted_only=True, safer=_stays_local),
    Key("api_key", str, None, "API key, for servers or hosted providers that need one", True,
        trusted_only=True, secret=True),
    Key("max_context_tokens", int, None, "Context window; default: read from the server", True,
        minimum=512),
    Key("max_output_tokens", int, 32768, "Most tokens one reply may use", minimum=16),
    Key("max_turns", int, 100, "Most model calls for one request", minimum=1),
    Key("temperature", float, None, "Sampling temperature; default: the server's", True,
        minimum=0),
    Key("request_timeout", float, 900.0, "Seconds to wait for a reply to start (loading the "
        "model and processing the prompt included)", minimum=1),
    Key("idle_timeout", float, 600.0, "Seconds a streaming reply may go without new data",
        minimum=1),
    Key("retries", int, 3, "Retries on connection errors, dropped streams, 429 and 5xx",
        minimum=0),
    Key("retry_after_max", float, 60.0, "Longest wait honoured from a server's Retry-After",
        minimum=0),
    Key("quiet", bool, False, "One-shot: print nothing but the answer and errors"),
    Key("json", bool, False, "One-shot: print one JSON object instead of the answer (the "
        "same as output_format = \"json\")"),
    Key("output_format", str, "text", "One-shot output on stdout: text (the answer), json "
        "(one object at the end) or stream-json (one object per event, a line each)",
        choices=OUTPUT_FORMATS),
    Key("yolo", bool, False, "Allow every command, write and fetch of a public host "
        "without asking", trusted_only=True, safer=looseness.off),
    Key("commands", str, "ask", "Command policy: ask, all, none or a comma-separated list",
        trusted_only=True, safer=looseness.narrower_policy(fold_names=False)),
    Key("command_timeout", int, 120, "Seconds before a command is killed", minimum=1),
    Key("fetch", str, "ask", "Fetch policy: ask, all, none or a comma-separated list of hosts",
        trusted_only=True, safer=looseness.narrower_policy(fold_names=True)),
    Key("add_dir", list, [], "Extra directories the file tools may read and write",
        trusted_only=True, safer=looseness.subset),
    Key("add_dir_ro", list, [], "Extra directories the file tools may only read",
        trusted_only=True, safer=looseness.subset),
    Key("sandbox", str, "auto", "Run commands in the bubblewrap sandbox: auto (when it "
        "works), on (refuse commands without it) or off", choices=("auto", "on", "off"),
        trusted_only=True, safer=looseness.ranked("off", "auto", "on")),
    Key("allow_net", bool, False, "Let sandboxed commands use the network", trusted_only=True,
        safer=looseness.off),
    Key("pass_env", list, [], "Secret environment variables commands may still see",
        trusted_only=True, safer=looseness.subset),
    Key("edits", str, "auto", "File edits: auto (made at once, undoable with /undo) or ask "
        "(the REPL shows each diff and asks)", choices=("auto", "ask"), trusted_only=True,
        safer=looseness.ranked("auto", "ask")),
    Key("read_only", bool, False, "Offer the model only tools that cannot change anything "
        "(explain and plan work; /plan toggles it in the REPL)", trusted_only=True,
        safer=looseness.on),
    Key("subagent_tools", str, "read-only", "Tools of a subagent (the task tool): "
        "read-only, all, or a comma-separated list of tools added to the read-only ones",
        trusted_only=True, safer=looseness.fewer_tools),
    Key("subagent_max_turns", int, 40, "Most model calls of one subagent", minimum=1),
    Key("tool_result_share", float, 0.2, "Largest share of the input budget one tool "
        "result may take", minimum=0.01, maximum=1),
    Key("compaction_trigger", float, 0.85, "From this share of the input budget a "
        "compaction is due (made after a small turn, by the input budget at the latest)",
        minimum=0.1, maximum=1),
    Key("compaction_target", float, 0.55, "Compact down to this share of the input budget "
        "(below compaction_trigger)", minimum=0.05, maximum=1),
    Key("proactive_summaries", bool, False, "Summarize every 10 turns as a safety net"),
    Key("mcp", bool, True, "Start the MCP servers of mcp_servers (false: none this run)"),
    Key("mcp_servers", dict, {}, "MCP servers, one [mcp_servers.NAME] table each",
        trusted_only=True, safer=looseness.servers_kept, fields=MCP_SERVER_FIELDS,
        check=_mcp_server_problems),
)
KEYS_BY_NAME = {k.name: k for k in KEYS}


@dataclass(frozen=True)
class Settings:
    """The resolved settings. `sources` says where each non-default value came from;
    `trust_keys` holds the project file's keys (as written) that need trust, applied only
    when `project_trusted`. A table's entries have their own sources ("mcp_servers.NAME")."""

    provider: str = "lmstudio"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    max_context_tokens: int | None = None
    max_output_tokens: int = 32768
    max_turns: int = 100
    temperature: float | None = None
    request_timeout: float = 900.0
    idle_timeout: float = 600.0
    retries: int = 3
    retry_after_max: float = 60.0
    quiet: bool = False
    output_format: str = "text"
    yolo: bool = False
    commands: str = "ask"
    command_timeout: int = 120
    fetch: str = "ask"
    add_dir: tuple[str, ...] = ()
    add_dir_ro: tuple[str, ...] = ()
    sandbox: str = "auto"
    allow_net: bool = False
    pass_env: tuple[str, ...] = ()
    edits: str = "auto"
    read_only: bool = False
    subagent_tools: str = "read-only"
    subagent_max_turns: int = 40
    tool_result_share: float = 0.2
    compaction_trigger: float = 0.85
    compaction_target: float = 0.55
    proactive_summaries: bool = False
    mcp: bool = True
    mcp_servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    project_root: Path = field(default_factory=Path.cwd)
    config_files: tuple[Path, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    trust_keys: Mapping[str, Any] = field(default_factory=dict)
    project_trusted: bool = False

    @property
    def project_file(self) -> Path:
        """The project's own `swival.toml`, the file `trust_keys` come from."""
        return self.project_root / "swival.toml"

    @property
    def json(self) -> bool:
        """One JSON object at the end (`--json`, `output_format = "json"`)."""
        return self.output_format == "json"

    @property
    def held_back(self) -> Mapping[str, Any]:
        """The `trust_keys` this run ignores because the project is not trusted."""
        return {} if self.project_trusted else self.trust_keys


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


def _expected(key: Key) -> str:
    if key.choices:
        return "one of " + ", ".join(repr(c) for c in key.choices)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list of strings", dict: "a table of strings"}
    return names[key.type]


def _table(key: Key, value: Any, origin: str) -> dict[str, dict[str, Any]]:
    """A table of named entries checked against `key.fields`; every problem in it is
    reported in one ConfigError."""
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: `{key.name}` must be tables such as "
                          f"[{key.name}.NAME], got {value!r}.")
    by_name = {f.name: f for f in key.fields}
    problems: list[str] = []
    out: dict[str, dict[str, Any]] = {}
    for entry, given in value.items():
        where = f"{origin}: [{key.name}.{entry}]"
        if not TABLE_NAME.match(entry):
            problems.append(f"{where}: a name holds up to 32 letters, digits, '-' and single "
                            "'_'.")
            continue
        if not isinstance(given, dict):
            problems.append(f"{where} must be a table of keys, got {given!r}.")
            continue
        checked: dict[str, Any] = {}
        for name, item in given.items():
            if name not in by_name:
                hint = difflib.get_close_matches(name, by_name, n=1)
                problems.append(f"{where}: unknown key `{name}`." + (
                    f" Did you mean `{hint[0]}`?" if hint else
                    f" Known keys: {', '.join(by_name)}."))
                continue
            try:
                checked[name] = coerce(by_name[name], item, where)
            except ConfigError as error:
                problems.append(str(error))
        problems += [f"{where}: {text}" for text in (key.check(checked) if key.check else [])]
        out[entry] = {f.name: checked.get(f.name, _default(f)) for f in key.fields}
    if problems:
        raise ConfigError("\n".join(problems))
    return out


def _default(key: Key) -> Any:
    return tuple(key.default) if isinstance(key.default, list) else (
        dict(key.default) if isinstance(key.default, dict) else key.default)


def coerce(key: Key, value: Any, origin: str, written: str | None = None) -> Any:
    """Check one value against its key; raise ConfigError naming `origin` on a mismatch,
    with the value as the person wrote it (`written`, else the value as it came)."""
    shown = repr(value) if written is None else written

    def bad(why: str = "") -> ConfigError:
        return ConfigError(f"{origin}: `{key.name}` must be {_expected(key)}{why}, got {shown}.")

    if value is None and key.optional:
        return None
    if key.type is dict and key.fields:
        return _table(key, value, origin)
    if key.type is dict:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise bad()
        return dict(value)
    if key.type is bool:
        if not isinstance(value, bool):
            raise bad()
    elif key.type is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
    elif key.type is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad()
        value = float(value)
    elif key.type is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad()
        value = tuple(value)
    elif not isinstance(value, str):
        raise bad()
    if key.choices and value not in key.choices:
        raise bad()
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = key.minimum, key.maximum
        if low is not None and high is not None and not low <= value <= high:
            raise bad(f" from {low:g} to {high:g}")
        if low is not None and value < low:
            raise bad(f" (at least {low:g})")
    return value


def _from_env_text(key: Key, text: str, origin: str) -> Any:
    """Environment values are text: parse them by the key's type first."""
    try:
        if key.type is bool:
            low = text.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off", ""):
                return False
            raise ValueError
        if key.type is int:
            return int(text)
        if key.type is float:
            return float(text)
        if key.type is list:
            return [p.strip() for p in text.split(",") if p.strip()]
    except ValueError:
        raise ConfigError(f"{origin}: `{key.name}` must be {_expected(key)}, got "
                          f"{_env_written(key, text)}.") from None
    return text


def _env_written(key: Key, text: str) -> str:
    """An environment value as it was written: a number bare, other text quoted."""
    try:
        float(text)
    except ValueError:
        return repr(text)
    return text.strip()


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
                value = _from_env_text(key, env[var], origin)
                layer[key.name] = (coerce(key, value, origin, _env_written(key, env[var])),
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
    trigger, target = (merged.get(name, (_default(KEYS_BY_NAME[name]), "the default"))
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
    users = {**{k.name: _default(k) for k in KEYS}, **_values(below)}
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


HIDDEN = "(secret, not shown)"


def public_value(key: Key, value: Any) -> Any:
    """`value` as it may be shown to a person: a secret key's value hidden, and in a
    table the values of its secret fields (`env`, `headers`) hidden, their names kept."""
    if key.secret:
        return HIDDEN
    if not (key.fields and isinstance(value, Mapping)):
        return value
    secret = {f.name for f in key.fields if f.secret}
    return {entry: {name: {k: HIDDEN for k in item} if name in secret and isinstance(
        item, Mapping) else item for name, item in fields.items()}
        for entry, fields in value.items()}


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
