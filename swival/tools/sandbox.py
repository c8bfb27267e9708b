"""What a command can reach: the bubblewrap sandbox and an environment without secrets.

With a working `bwrap` (Linux, Debian package `bubblewrap`) every command runs in new
mount and PID namespaces, with no capabilities, where:

- the whole filesystem is read-only, except the workspace, the `--add-dir` directories and
  a private `/tmp` (a directory of this session, removed when it ends; `TMPDIR=/tmp`);
- inside those, `.git/` and `.swival/` stay read-only (also when `.git` is a file pointing
  at a git directory elsewhere, and, in the workspace, when they do not exist yet), so no
  command can plant a hook or a config that later runs outside the sandbox;
- `/run` is an empty tmpfs, which hides the sockets that lead out of any sandbox (Docker,
  D-Bus, the system's services); `/dev` and `/proc` are the minimal ones bwrap builds;
- Swival's own places are hidden (`hidden`): the user's config directory (keys, MCP
  headers) and state directory (trusted projects, the session index) become empty, and
  the SSH agent's socket (SSH_AUTH_SOCK) cannot be connected to;
- there is no network (not even the host's loopback) unless `allow_net`.

The command keeps the caller's process group (no `--new-session`), so killing the group
kills bwrap and, through `--die-with-parent` and the PID namespace, everything inside.

Whether bwrap works is decided by one trial run per process (never on the `--help`
path: only building a `Sandbox` in mode auto or on runs it). Sandboxed or not, every
command gets the caller's environment minus secrets: variables `is_secret_name` marks and
variables whose value is a known secret; `pass_env` names the ones to let through. Git
is told, through GIT_CONFIG_COUNT, to use a bare repository only when the command names
it (`safe.bareRepository=explicit`): a repository a command made in the workspace could
otherwise bring its own config, and programs to run with it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from swival.config import (
    Settings,
    global_config_path,
    is_secret_name,
    known_secrets,
    user_state_dir,
)
from swival.errors import ConfigError
from swival.tools.process import Outcome
from swival.tools.sandbox_stubs import hold_workspace, missing_protected, release

PROTECTED_NAMES = (".git", ".swival")
PROBE_TIMEOUT = 10.0
# git settings for every command: a bare repository is used only when named with
# --git-dir or GIT_DIR, never found in the current directory, where a command could
# have written one whose config (core.fsmonitor, ...) runs programs.
HARNESS_GIT_CONFIG = {"safe.bareRepository": "explicit"}
MIN_SECRET_CHARS = 8  # like redaction: shorter values are not keys, and would match ordinary text
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
READ_ONLY_FAILURE = re.compile(r"read-only file system|\bEROFS\b", re.IGNORECASE)
NETWORK_FAILURE = re.compile(
    r"could not resolve|temporary failure in name resolution|name or service not known|"
    r"nodename nor servname|no address associated with hostname|failed to resolve|"
    r"getaddrinfo|EAI_AGAIN|network is unreachable|ENETUNREACH|connection refused|"
    r"ECONNREFUSED|failed to establish a new connection|temporary failure resolving",
    re.IGNORECASE,
)
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: "
                "dnf install bubblewrap)")
NAMESPACE_HINT = ("let bwrap create user namespaces (sysctl kernel.unprivileged_userns_clone=1 "
                  "or user.max_user_namespaces > 0; on Ubuntu 24.04 an AppArmor profile for "
                  "bwrap), or run Swival where it can")


@dataclass(frozen=True)
class SandboxConfig:
    """`mode` is auto, on or off; `secrets` are values no command may see in its
    environment (the configured key, secret variables; later MCP servers' env/headers);
    `hidden` are paths no command may see (see `_hide_flags`); `bwrap` is the program to
    use (None: the `bwrap` on PATH)."""

    mode: str = "off"
    allow_net: bool = False
    pass_env: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    bwrap: str | None = None


@dataclass(frozen=True)
class Mounts:
    """The directories a command may write (`writable[0]` is the workspace) and the extra
    ones it may only read."""

    writable: tuple[Path, ...]
    read_only: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Launch:
    """How to start one command: the full argv and its environment."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool = False

    def outcome(self, outcome: Outcome) -> Outcome:
        """`outcome` as an unsandboxed run reports it: bwrap turns a command killed by
        signal N into exit code 128+N (as shells do); give back -N. (A command that
        deliberately exits with such a code reads as killed too.)"""
        code = outcome.exit_code
        if self.sandboxed and code is not None and 128 < code < 128 + signal.NSIG:
            return replace(outcome, exit_code=128 - code)
        return outcome


def sandbox_from_settings(settings: Settings, env: Mapping[str, str]) -> Sandbox:
    """The session's sandbox; raises ConfigError for a `pass_env` entry that is not a
    variable name. Runs the bwrap trial unless the mode is off."""
    bad = [name for name in settings.pass_env if not ENV_NAME.match(name)]
    if bad:
        raise ConfigError(f"pass_env: {', '.join(map(repr, bad))} is not an environment "
                          "variable name; give names such as GITHUB_TOKEN.")
    return Sandbox(SandboxConfig(mode=settings.sandbox, allow_net=settings.allow_net,
                                 pass_env=settings.pass_env,
                                 secrets=known_secrets(settings, env), hidden=hidden_paths(env)))


def hidden_paths(env: Mapping[str, str]) -> tuple[str, ...]:
    """Swival's own config and state directories, and the SSH agent's socket."""
    found = [global_config_path(env).parent, user_state_dir(env)]
    return tuple(str(p) for p in found) + ((env["SSH_AUTH_SOCK"],) if env.get("SSH_AUTH_SOCK")
                                           else ())


class Sandbox:
    """One session's confinement of commands. `active` tells whether commands run under
    bwrap; `problem` says why bwrap cannot be used (None when it can, or mode is off)."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.bwrap: str | None = None
        self.problem: str | None = None
        self._fix = ""
        self._tmp: Path | None = None
        if self.config.mode != "off":
            self.bwrap, failure = _find_bwrap(self.config)
            if failure:
                self.problem, self._fix = failure

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    def describe(self) -> str:
        """One phrase for the start-up line and --doctor."""
        if self.active:
            net = "network allowed" if self.config.allow_net else "no network"
            return f"commands sandboxed (bubblewrap, {net})"
        if self.config.mode == "off":
            return "commands not sandboxed (sandbox off)"
        if self.config.mode == "on":
            return "commands refused (sandbox on, but bubblewrap does not work here)"
        return "commands not sandboxed (bubblewrap unavailable)"

    def startup_notice(self) -> str | None:
        """What to tell the person at start-up when bwrap was wanted but does not work."""
        if self.problem is None:
            return None
        if self.config.mode == "on":
            return (f"Sandbox on, but {self.problem}: every command will be refused. To run "
                    f"commands, {self._fix}, or start with --sandbox off.")
        return (f"Commands run without a sandbox: {self.problem}. To confine them, "
                f"{self._fix}; to silence this, use --sandbox off (config: sandbox = \"off\").")

    def refusal(self) -> str | None:
        """Why no command may run (mode on without a working bwrap), for the model."""
        if self.config.mode == "on" and not self.active:
            return (f"commands must run in the sandbox (--sandbox on), and {self.problem}. "
                    "No command can run in this session; tell the user, who can install "
                    "bubblewrap or restart with --sandbox off.")
        return None

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """`base` without secrets (by name or by value), except the `pass_env` names, with
        HARNESS_GIT_CONFIG added to git's configuration."""
        hidden = {s for s in self.config.secrets if len(s) >= MIN_SECRET_CHARS}
        passed = set(self.config.pass_env)
        env = {k: v for k, v in base.items()
               if k in passed or not (is_secret_name(k) or v in hidden)}
        if self.active:
            env["TMPDIR"] = "/tmp"
        return {**env, **git_settings(env, HARNESS_GIT_CONFIG)}

    @contextlib.contextmanager
    def launch(self, argv: Sequence[str], mounts: Mounts, base_env: Mapping[str, str],
               ) -> Iterator[Launch]:
        """How to start `argv` (sandboxed when active). On leaving, the empty read-only
        stand-ins for a missing `.git`/`.swival` that bwrap left in the workspace are
        removed, once no sandboxed command of this process or another runs there."""
        env = self.environment(base_env)
        if self.bwrap is None:
            yield Launch(list(argv), env)
            return
        hold = hold_workspace(mounts.writable[0])  # before looking: a stub may be leaving
        stubs = missing_protected(mounts.writable[0], PROTECTED_NAMES)
        flags = [*base_flags(self.config.allow_net), *_mount_flags(mounts, self._private_tmp()),
                 *_hide_flags(self.config.hidden, mounts), *_protect_flags(mounts, stubs),
                 "--chdir", str(mounts.writable[0])]
        try:
            yield Launch([self.bwrap, *flags, "--", *argv], env, sandboxed=True)
        finally:
            release(mounts.writable[0], hold, stubs)

    def explain(self, output: str, mounts: Mounts) -> str:
        """Notes for the model when `output` shows the sandbox got in the way ('' if not)."""
        if not self.active:
            return ""
        notes = []
        if READ_ONLY_FAILURE.search(output):
            places = ", ".join(str(p) for p in mounts.writable)
            notes.append(
                f"[sandbox: commands may write only in {places} and /tmp (private to this "
                "session); .git/, .swival/ and everything else are read-only, so git commit, "
                "git add and installs outside the project fail here. If the write is needed, "
                "tell the user: they can allow it by restarting with --sandbox off (or "
                "--add-dir DIR for one more writable directory).]")
        if not self.config.allow_net and NETWORK_FAILURE.search(output):
            notes.append(
                "[sandbox: commands run without network access, not even to services on "
                "this machine's localhost. If this command needs the network, tell the "
                "user: they can allow it by restarting with --allow-net.]")
        return "\n".join(notes)

    def _private_tmp(self) -> Path:
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="swival-tmp-"))
            weakref.finalize(self, shutil.rmtree, str(self._tmp), True)
        return self._tmp


def git_settings(env: Mapping[str, str], settings: Mapping[str, str]) -> dict[str, str]:
    """The GIT_CONFIG_COUNT/KEY_n/VALUE_n variables that add `settings` to git's
    configuration after the ones `env` already gives (a count that is not a number
    counts as none: git would refuse to run with it)."""
    count = env.get("GIT_CONFIG_COUNT", "0")
    start = int(count) if count.isdigit() else 0
    out = {"GIT_CONFIG_COUNT": str(start + len(settings))}
    for n, (key, value) in enumerate(settings.items(), start):
        out[f"GIT_CONFIG_KEY_{n}"], out[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return out


def base_flags(allow_net: bool) -> list[str]:
    """The bwrap flags every sandboxed command gets, before any bind of its own."""
    flags = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
             "--die-with-parent", "--cap-drop", "ALL"]
    if not allow_net:
        flags.append("--unshare-net")
    if os.path.isdir("/run"):
        flags += ["--tmpfs", "/run"]
        resolv = os.path.realpath("/etc/resolv.conf")
        if allow_net and resolv.startswith("/run/") and os.path.exists(resolv):
            flags += ["--ro-bind", resolv, resolv]  # systemd-resolved keeps it under /run
    return flags


def _find_bwrap(config: SandboxConfig) -> tuple[str | None, tuple[str, str] | None]:
    """The bwrap to use, or None and (what is wrong, what the person can do about it)."""
    path = config.bwrap or shutil.which("bwrap")
    if path is None and sys.platform != "linux":
        return None, (f"there is no command sandbox for {sys.platform} yet",
                      "run Swival in a container or a VM")
    if path is None:
        return None, ("bubblewrap (bwrap) is not installed", INSTALL_HINT)
    try:
        problem = probe(path, config.allow_net)
    except OSError as exc:
        return None, (f"bwrap ({path}) cannot be started: {exc.strerror or exc}", INSTALL_HINT)
    return (None, (problem, NAMESPACE_HINT)) if problem else (path, None)


@functools.cache  # one trial per process and bwrap: its answer does not change meanwhile
def probe(bwrap: str, allow_net: bool) -> str | None:
    """Run `true` under bwrap with the base flags: None when it works, else why not.
    Raises OSError when `bwrap` cannot be started at all."""
    try:
        done = subprocess.run(
            [bwrap, *base_flags(allow_net), "--", "/bin/sh", "-c", ":"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
            timeout=PROBE_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return f"bwrap failed a trial run (no answer in {PROBE_TIMEOUT:g} s)"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return f"bwrap failed a trial run ({why})"
    return None


def _mount_flags(mounts: Mounts, private_tmp: Path) -> list[str]:
    """A private /tmp, then each allowed directory at its own path, parents before
    children so a read-only directory inside a writable one stays read-only."""
    flags = ["--bind", str(private_tmp), "/tmp"]
    binds = [(p.resolve(), "--ro-bind") for p in mounts.read_only]
    binds += [(p.resolve(), "--bind") for p in mounts.writable]
    for path, flag in sorted(binds, key=lambda bind: len(bind[0].parts)):
        flags += [flag, str(path), str(path)]
    return flags


def _hide_flags(hidden: Sequence[str], mounts: Mounts) -> list[str]:
    """An empty read-only tmpfs over each hidden directory, /dev/null over each other hidden
    file (a socket: connecting is refused). Left alone: a missing path, one that holds a
    directory the command may use (the workspace under the config directory), and one
    under /tmp or /run outside those directories (the sandbox has its own /tmp and /run)."""
    used = [p.resolve() for p in (*mounts.writable, *mounts.read_only)]
    flags: list[str] = []
    for name in hidden:
        path = Path(name).resolve()
        inside = any(p in path.parents for p in used)
        if (not path.exists() or any(p == path or path in p.parents for p in used)
                or (not inside and path.parts[1:2] in (("tmp",), ("run",)))):
            continue
        flags += (["--tmpfs", str(path), "--remount-ro", str(path)] if path.is_dir()
                  else ["--ro-bind", "/dev/null", str(path)])
    return flags


def _protect_flags(mounts: Mounts, stubs: list[Path]) -> list[str]:
    """Read-only binds over `.git`/`.swival` of every writable directory (and where a
    `.git` file points), and an empty read-only tmpfs where they are missing."""
    flags: list[str] = []
    for root in mounts.writable:
        for name in PROTECTED_NAMES:
            for path in _with_git_pointers(root / name):
                flags += ["--ro-bind", str(path), str(path)]
    for stub in stubs:
        flags += ["--tmpfs", str(stub), "--remount-ro", str(stub)]
    return flags


def _with_git_pointers(path: Path) -> list[Path]:
    """`path` resolved, plus, when it is a `.git` file (worktree, submodule), the git
    directory it names and that directory's `commondir` (hooks and config live there).
    Only paths that exist."""
    if not os.path.lexists(path):
        return []
    found = [path.resolve()]
    if path.name == ".git" and path.is_file():
        gitdir = _pointer(path, "gitdir: ")
        if gitdir is not None:
            found.append(gitdir)
            common = _pointer(gitdir / "commondir", "")
            if common is not None:
                found.append(common)
    return [p for p in found if p.exists()]


def _pointer(file: Path, prefix: str) -> Path | None:
    """The path a git pointer file holds (relative to the file's directory), or None."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith(prefix) or len(text) == len(prefix):
        return None
    return (file.parent / text[len(prefix):].strip()).resolve()
