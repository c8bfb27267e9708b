"""The settings' schema: every key with its type, default, range and trust mark (`Key`,
`KEYS`), the MCP server table's fields and rules, and the resolved `Settings`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swival import looseness
from swival.looseness import NoLooser

PROVIDERS = ("lmstudio", "ollama", "llamacpp", "generic")
OUTPUT_FORMATS = ("text", "json", "stream-json")
HOSTED_PREFIXES = (
    "openai", "openrouter", "anthropic", "gemini", "groq", "mistral", "deepseek", "xai",
    "together_ai", "fireworks_ai", "cohere", "perplexity", "cerebras", "azure", "bedrock",
    "vertex_ai",
)

LMSTUDIO_PUBLISHERS = ("openai", "deepseek")  # hosted prefixes LM Studio model keys use too


def selects_hosted(provider: str | None, base_url: str | None, model: str | None) -> bool:
    """Whether these choices send requests to a hosted provider through a litellm model
    string. `provider` is None when nobody chose one (the default, lmstudio): then the
    `openai/` and `deepseek/` prefixes stay local, because LM Studio model keys such as
    `openai/gpt-oss-20b` and `deepseek/deepseek-r1-0528-qwen3-8b` use them too."""
    if base_url or not model or "/" not in model:
        return False
    prefix = model.split("/", 1)[0]
    if provider == "generic":
        return prefix in HOSTED_PREFIXES
    return provider is None and prefix not in LMSTUDIO_PUBLISHERS and prefix in HOSTED_PREFIXES


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
        "compaction is due (made after a small turn, by the input budget at the latest; a small "
        "turn up to 5 points below it makes it early)",
        minimum=0.1, maximum=1),
    Key("compaction_target", float, 0.55, "Compact down to this share of the input budget "
        "(below compaction_trigger)", minimum=0.05, maximum=1),
    Key("proactive_summaries", bool, False, "Summarize every 10 turns as a safety net"),
    Key("mcp", bool, True, "Start the MCP servers of mcp_servers (false: none this run)",
        trusted_only=True, safer=looseness.off),
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
