"""Which shell commands may run: the `--commands` policy behind `ToolContext.approve`.

Modes:
- "all": every command runs (unparsed).
- "none": no command runs; the reason tells the model (and so the user) how to allow them.
- an allowlist such as "git,pytest,ls": a command runs only when its bash parse
  (shell_parse) is nothing but simple commands with literal words joined by `;`, a
  newline, `&&`, `||` or `|`; every program is on the list (or is `cd`, `pwd`, `true`,
  `false`; a name with a `/` only matches the same path); no program uses an argument
  from the table in program_rules (`git -c`, `find -exec`, ...); every `cd` stays in the
  workspace; the program is not looked up in a relative PATH entry or one inside the
  workspace; and every redirection, and every file a program is told to write (`sed -i`,
  `sort -o`, `tee`, ...), writes inside the workspace but outside `.git/` and `.swival/`,
  or to `/dev/null`, or duplicates a descriptor (`2>&1`), and so does every member an
  extracting tar or unzip would write; input redirections read inside the readable
  directories. Without the sandbox, git also needs approval when it would update the
  work tree (a commit can replace `.swival/`) or when the project's own repository
  configures a program or hook for it (git_config). Anything else is refused with a
  reason naming what was found and what to do instead.
- "ask": the same check. What passes runs; anything else goes to the injected callback
  as a `Question`: "once" runs it, "always" runs it and adds its unlisted programs to the
  allowlist for the session (nothing more), "deny" refuses it. A command that needs
  approval for anything but an unlisted program is asked about every time.
If the parser cannot be loaded, nothing is auto-approved.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from swival.errors import ConfigError
from swival.tools.approval import Refusal
from swival.tools.archive_writes import unpacked
from swival.tools.base import ToolContext
from swival.tools.git_config import hook
from swival.tools.git_config import planted as planted_setting
from swival.tools.policy_links import DEVICES, after_links
from swival.tools.program_rules import risk
from swival.tools.program_writes import (
    changes_itself,
    git_subcommand,
    replaces_state,
    unknown_option,
    written_files,
)
from swival.tools.shell_parse import Redirect, Script, parse
from swival.tools.workspace import protected_part, readable_roots, writable_roots

KEYWORD_MODES = ("ask", "all", "none")
ALWAYS_ALLOWED = frozenset({"cd", "pwd", "true", "false"})
PROGRAM_NAME = re.compile(r"^[\w.+/-]+$")

HOW_TO_ALLOW = ("restart with --commands all, --yolo, or an allowlist such as "
                "--commands git,pytest (config key `commands`)")
INSTEAD = {
    "shell": "run each program as its own command, with literal arguments",
    "option": "do without that option, or ask the user to run the command",
    "write": "write only inside the workspace (not .git/ or .swival/), or use write_file",
    "read": "read only inside the workspace",
    "cd": "stay inside the workspace",
    "path": "ask the user to take relative directories, and directories inside the "
            "workspace, out of PATH",
    "parser": "Tell the user: installing Swival again the way it was installed (pip, pipx "
              "or uv) brings back the parser, the packages tree-sitter and tree-sitter-bash.",
    "links": "run the command that creates or moves links on its own, then check the "
             "result before writing there",
    "unconfined": "ask the user to run it, or to run Swival with the command sandbox (bubblewrap)",
}


@dataclass(frozen=True)
class Finding:
    """Something in a command that needs a person's approval each time: `what` is named
    for a person, `instead` tells the model what to do when no one can approve."""

    what: str
    instead: str


@dataclass(frozen=True)
class Question:
    """What the person is asked about one command. `programs` are the unlisted programs
    "always" would add (empty: offer no "always"); `found` is what needs approval every
    time, in words for a person."""

    command: str
    programs: tuple[str, ...]
    found: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The command as a terminal may print it: control characters (which could hide
        part of it) are written as escapes such as `\\x1b`."""
        return "".join(c if c in "\n\t" or c.isprintable() else repr(c)[1:-1]
                       for c in self.command)


AskCallback = Callable[[Question], str]  # -> "once" | "always" | "deny"


@dataclass(frozen=True)
class Workspace:
    """Where commands start (`root`) and where their redirections may write and read.
    The default has no directories at all: every file redirection and `cd` is found.
    `relative_path` is the first relative entry of the commands' PATH (a program name
    could then find a file the model wrote); `search` the absolute entries, in order;
    `cdpath` says CDPATH is set (a `cd` could then go elsewhere); `confined` that commands
    run in the sandbox, where `.git/` and `.swival/` are read-only."""

    root: Path = Path("/")
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    relative_path: str | None = None
    cdpath: bool = False
    search: tuple[str, ...] = ()
    confined: bool = False

    @classmethod
    def of(cls, ctx: ToolContext, env: Mapping[str, str]) -> Workspace:
        """The workspace of `ctx`, for commands that run with environment `env`."""
        entries = env.get("PATH", "").split(os.pathsep)  # unset PATH: bash's default
        relative = next((e or "." for e in entries if not os.path.isabs(e)), None)
        return cls(ctx.root.resolve(), writable_roots(ctx), readable_roots(ctx), relative,
                   bool(env.get("CDPATH")), tuple(e for e in entries if os.path.isabs(e)),
                   ctx.sandbox.active)

    def git_code(self, script: Script) -> list[str]:
        """What the project's own repository makes git run for the git commands of
        `script`: a setting in its configuration, or a hook (swival/tools/git_config.py)."""
        subs = {(found or ("", []))[0] for c in script.commands if Path(c.words[0]).name
                == "git" for found in [git_subcommand(list(c.words[1:]))]}
        if not subs:
            return []
        planted = planted_setting(self.root)
        hooks = (hook(self.root, sub) for sub in sorted(subs))
        return [planted] if planted else [why for why in hooks if why][:1]

    def holding(self, path: Path, roots: Iterable[Path]) -> Path | None:
        return next((r for r in roots if path == r or path.is_relative_to(r)), None)

    def planted(self, program: str) -> str | None:
        """Why `program` may be a file a command wrote: a PATH entry inside a writable
        directory comes before (or is) the one it is found in, or what is found there
        leads into one. None when it is found outside them first (or nowhere)."""
        for entry in self.search:
            try:
                folder = Path(entry).resolve()
                found = folder / program
                runs = found.is_file() and os.access(found, os.X_OK)
                real = found.resolve() if runs else None
            except (OSError, RuntimeError):
                continue
            if self.holding(folder, self.writable):
                return (f"`{program}` is found in `{entry}` on PATH, a directory commands "
                        "can write" if runs else
                        f"PATH looks for `{program}` in `{entry}` first, a directory "
                        f"commands can write (a command could put a `{program}` there)")
            if real is not None:
                return None if self.holding(real, self.writable) is None else (
                    f"`{program}` on PATH is `{found}`, which leads to `{real}`, a file "
                    "commands can write")
        return None


def parse_mode(commands: str) -> str:
    """Normalise a `commands` setting; raise ConfigError when it is not a valid one."""
    value = commands.strip()
    if value.lower() in KEYWORD_MODES:
        return value.lower()
    names = [name.strip() for name in value.split(",") if name.strip()]
    bad = [name for name in names if not PROGRAM_NAME.match(name)]
    if not names or bad:
        raise ConfigError(
            f"commands: {commands!r} is not a valid policy. Use ask, all, none, or a "
            "comma-separated list of program names such as git,pytest,ls."
        )
    return ",".join(names)


def resolve_mode(commands: str, yolo: bool, interactive: bool) -> str:
    """The effective mode: --yolo means "all"; "ask" without a terminal means "none"."""
    if yolo:
        return "all"
    mode = parse_mode(commands)
    if mode == "ask" and not interactive:
        return "none"
    return mode


@dataclass
class CommandPolicy:
    """The approver for one session. `approve(command)` returns None to allow the command
    or the reason it was refused (the tool sends "command refused: <reason>")."""

    mode: str
    ask: AskCallback | None = None
    workspace: Workspace = field(default_factory=Workspace)
    approved: set[str] = field(default_factory=set)
    unattended: bool = False  # "none" because "ask" found no one to ask, not chosen

    def __post_init__(self) -> None:
        self.mode = parse_mode(self.mode)
        if self.mode not in KEYWORD_MODES:
            self.approved.update(self.mode.split(","))

    def describe(self) -> str:
        """A short phrase for start-up notices and /help."""
        if self.mode in ("all", "none"):
            return {"all": "all commands allowed", "none": "commands disabled"}[self.mode]
        if self.mode == "ask":
            return "commands need approval"
        return "commands allowed: " + self.mode.replace(",", ", ")

    def approve(self, command: str) -> str | None:
        if self.mode == "all":
            return None
        if self.mode == "none" and self.unattended:
            return Refusal(f"every command needs a person's approval and this run has no "
                           f"terminal to ask on; {HOW_TO_ALLOW}.",
                           "not run: commands need approval and this run cannot ask")
        if self.mode == "none":
            return Refusal(f"running commands is disabled in this session; to allow it, "
                           f"{HOW_TO_ALLOW}.", "not run: commands are disabled (--commands)")
        unlisted, found = self.review(command)
        if not unlisted and not found:
            return None
        if self.mode == "ask":
            return self._ask(command, unlisted, found)
        if found and found[0].instead == INSTEAD["parser"]:
            return Refusal(f"Swival's shell parser could not be loaded, so it cannot check "
                           f"any command and each one needs a person's approval, which no "
                           f"one can give in this run. {INSTEAD['parser']}",
                           "not run: the shell parser is missing, so every command needs "
                           "approval")
        return _refusal(unlisted, found, self.mode)

    def review(self, command: str) -> tuple[list[str], list[Finding]]:
        """The unlisted programs of `command`, and everything else needing approval."""
        script = parse(command)
        instead = INSTEAD["shell" if script.missing is None else "parser"]
        found = [Finding(what, instead) for what in script.constructs]
        unlisted: list[str] = []
        for simple in script.commands:
            program = simple.words[0]
            if program not in self.approved and program not in ALWAYS_ALLOWED:
                unlisted.append(program)
            option = risk(simple.words) or unknown_option(simple.words)
            state = None if self.workspace.confined else replaces_state(simple.words)
            if option:
                found.append(Finding(option, INSTEAD["option"]))
            elif state:
                found.append(Finding(state, INSTEAD["unconfined"]))
        if not self.workspace.confined:
            found += [Finding(f"{why}, with no sandbox around git", INSTEAD["unconfined"])
                      for why in self.workspace.git_code(script)]
        searched = [c.words[0] for c in script.commands
                    if "/" not in c.words[0] and c.words[0] not in ALWAYS_ALLOWED]
        if searched and self.workspace.relative_path is not None:
            found.append(Finding(f"PATH holds the relative directory "
                                 f"`{self.workspace.relative_path}`, so `{searched[0]}` may "
                                 "run a file from the project", INSTEAD["path"]))
        elif searched:
            planted = (self.workspace.planted(p) for p in dict.fromkeys(searched))
            found += [Finding(why, INSTEAD["path"]) for why in planted if why]
        found += self._paths(script)
        return list(dict.fromkeys(unlisted)), list(dict.fromkeys(found))

    def _paths(self, script: Script) -> list[Finding]:
        """Findings for redirections, files named for writing and `cd`, each resolved from
        every directory the command may run in. `cd D && next` runs `next` in D when the `cd`
        starts its `&&` chain; after `;` or `||` the old directories remain possible, and
        a `cd` inside a pipeline moves nothing."""
        commands, joins = script.commands, _joins(script)
        cwds = {self.workspace.root}
        reached = set(cwds)  # every directory this `&&`/`||` chain may have left us in
        found: list[Finding] = []
        for i, simple in enumerate(commands):
            writes = [Redirect(">", f) for f in written_files(simple.words)]
            itself = changes_itself(simple.words)
            found += [f for r in simple.redirects if r.target is not None
                      for f in self._target(r, cwds)]
            found += [f for r in writes for f in self._target(r, cwds, itself)]
            found += self._unpacked(list(simple.words), cwds)
            after = cwds
            if simple.words[0] == "cd":
                problem, targets = self._cd(list(simple.words[1:]), cwds)
                found += problem
                after = cwds if "|" in joins[i:i + 2] else targets
            reached |= after
            if joins[i + 1] == "|":
                continue
            cwds = after if joins[i + 1] == "&&" and joins[i] in (";", "&&") else reached
            if joins[i + 1] == ";":
                reached = set(cwds)
        return found + [Finding(what, INSTEAD["links"]) for what in after_links(script, joins)]

    def _target(self, redirect: Redirect, cwds: set[Path], itself: bool = False,
                ) -> list[Finding]:
        """Findings for one write or read; `itself`: the program changes the path as a
        whole, so the workspace directory itself may not be named."""
        target = redirect.target or ""
        if target in DEVICES:
            return []
        write = redirect.writes
        roots = self.workspace.writable if write else self.workspace.readable
        label = f"{'writing' if write else 'reading'} `{target}`"
        for path in _resolved(cwds, target):
            root = None if path is None else self.workspace.holding(path, roots)
            if path is None or root is None:
                return [Finding(f"{label}, outside the workspace",
                                INSTEAD["write" if write else "read"])]
            if itself and path == root:
                return [Finding(f"{label}, which is `{root}` itself, its .git/ and .swival/ "
                                "included", INSTEAD["write"])]
            if write and protected_part(path.relative_to(root).parts):
                return [Finding(f"{label}, inside .git/ or .swival/", INSTEAD["write"])]
        return []

    def _unpacked(self, words: list[str], cwds: set[Path]) -> list[Finding]:
        """unzip and tar write each member of the archive (unzip through symlinks
        already there): check them all."""
        name = Path(words[0]).name
        for cwd in sorted(cwds):
            members = unpacked(name, words[1:], cwd)
            if members is None:
                return [Finding(f"`{name}` extracting an archive Swival cannot list",
                                INSTEAD["write"])]
            found = [f for m in members for f in self._target(Redirect(">", m), {cwd})]
            if found:
                return found[:1]
        return []

    def _cd(self, args: list[str], cwds: set[Path]) -> tuple[list[Finding], set[Path]]:
        """Findings for one `cd`, and where it leads when it succeeds."""
        if len(args) != 1 or args[0].startswith("-"):
            return [Finding("`cd` without exactly one directory", INSTEAD["cd"])], cwds
        if self.workspace.cdpath and not args[0].startswith(("/", "./", "../")) \
                and args[0] not in (".", ".."):
            return [Finding(f"`cd {args[0]}` while CDPATH is set, which may lead elsewhere",
                            "write the directory as ./" + args[0])], cwds
        targets = _resolved(cwds, args[0])
        inside = {p for p in targets
                  if p is not None and self.workspace.holding(p, self.workspace.writable)}
        if None in targets or inside != set(targets):
            return [Finding(f"`cd {args[0]}`, which leaves the workspace", INSTEAD["cd"])], cwds
        return [], inside

    def _ask(self, command: str, unlisted: list[str], found: list[Finding]) -> str | None:
        if self.ask is None:
            return Refusal(f"no one is available to approve commands; {HOW_TO_ALLOW}.",
                           "not run: it needs approval and this run cannot ask")
        by_path = [p for p in unlisted if "/" in p]
        what = [f.what for f in found] + [f"`{p}`, a program named by its path" for p in by_path]
        programs = tuple(p for p in unlisted if "/" not in p)
        answer = self.ask(Question(command, programs, tuple(what)))
        if answer == "always":
            self.approved.update(programs)
            return None
        if answer == "once":
            return None
        return Refusal("the user declined to run it. Ask them, or continue without running "
                       "it.", "not run: you declined")


def _joins(script: Script) -> list[str]:
    """The operator before and after each command (`;` at both ends); all `;` when the
    script has constructs (it needs approval anyway, and its operators may not line up)."""
    inner = len(script.commands) - 1
    fits = len(script.operators) == inner and not script.constructs
    return [";", *(script.operators if fits else [";"] * inner), ";"]


def _resolved(cwds: set[Path], target: str) -> list[Path | None]:
    """`target` resolved from each possible working directory; None where it cannot be."""
    out: list[Path | None] = []
    for cwd in sorted(cwds):
        try:
            out.append((cwd / target).resolve())
        except (OSError, RuntimeError, ValueError):
            out.append(None)
    return out


def _refusal(unlisted: list[str], found: list[Finding], allowed: str) -> str:
    """The reason sent to the model when no one can approve: what was found, what to do."""
    if found:
        named = "; ".join(f.what for f in found[:3])
        return Refusal(f"this command needs a person's approval for {named}, and no one "
                       f"can give it in this run; {found[0].instead}.",
                       f"not run: it needs approval ({found[0].what}) and this run cannot ask")
    names = ", ".join(f"`{p}`" for p in unlisted)
    verb = "is" if len(unlisted) == 1 else "are"
    listed = allowed.replace(",", ", ")
    return Refusal(f"{names} {verb} not in the allowed programs ({listed}); use only those "
                   "programs.", f"not run: {names} {verb} not allowed (--commands {allowed})")
