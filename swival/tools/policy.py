"""Which shell commands may run: the `--commands` policy behind `ToolContext.approve`.

Modes:
- "all": every command runs.
- "none": no command runs; the reason tells the model (and so the user) how to allow them.
- an allowlist such as "git,pytest,ls": every program the command starts (each part of
  a pipeline or of a `&&`, `||`, `;`, `&` list, after `VAR=value` prefixes) must be on
  the list. Command substitution (`$(...)`, backticks, `<(...)`) cannot be checked and
  is refused. A name with a `/` only matches the same path, so `./git` is not `git`.
  `cd`, `pwd`, `true` and `false` are always allowed (they change nothing).
- "ask": an injected callback decides per command: "once" runs it, "always" runs it and
  approves its programs for the rest of the session, "deny" refuses it. The callback is
  told which programs need approval; for a command whose programs cannot be known it is
  told "this command", and "always" then approves that exact command text only.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from swival.errors import ConfigError

AskCallback = Callable[[str, str], str]  # (command, programs) -> "once" | "always" | "deny"

KEYWORD_MODES = ("ask", "all", "none")
ALWAYS_ALLOWED = frozenset({"cd", "pwd", "true", "false"})
SEPARATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "(", ")", "|&", "\n"})
REDIRECTIONS = frozenset({"<", ">", ">>", ">&", "<&", "&>", "&>>", "<>", ">|", "<<", "<<<"})
SUBSTITUTION = re.compile(r"\$\(|`|[<>]\(")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PROGRAM_NAME = re.compile(r"^[\w.+/-]+$")

HOW_TO_ALLOW = ("restart with --commands all, --yolo, or an allowlist such as "
                "--commands git,pytest (config key `commands`)")


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


def programs_in(command: str) -> list[str] | None:
    """The programs a shell command would start, in order, or None when that cannot be
    known statically (command substitution, unbalanced quotes)."""
    if SUBSTITUTION.search(command):
        return None
    # A newline separates commands like `;` does (inside quotes the change is harmless:
    # only the program names are kept).
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    programs: list[str] = []
    at_start, skip_next = True, False
    for token in tokens:
        if skip_next:
            skip_next = False
        elif token in SEPARATORS:
            at_start = True
        elif token in REDIRECTIONS:
            skip_next = True
        elif at_start and not ASSIGNMENT.match(token):
            programs.append(token)
            at_start = False
    return programs


@dataclass
class CommandPolicy:
    """The approver for one session. `approve(command)` returns None to allow the command
    or the reason it was refused (the tool sends "command refused: <reason>")."""

    mode: str
    ask: AskCallback | None = None
    approved: set[str] = field(default_factory=set)
    approved_commands: set[str] = field(default_factory=set)

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
        if self.mode == "none":
            return f"running commands is disabled in this session; to allow it, {HOW_TO_ALLOW}."
        programs = programs_in(command)
        if self.mode == "ask":
            return self._ask(command, programs)
        if programs is None:
            return ("the command uses command substitution or quoting that cannot be checked "
                    "against the allowlist; run each program as its own command.")
        for program in programs:
            if not self._allowed(program):
                return (f"`{program}` is not in the allowed programs "
                        f"({self.mode.replace(',', ', ')}); use only those programs.")
        return None

    def _allowed(self, program: str) -> bool:
        return program in self.approved or program in ALWAYS_ALLOWED

    def _ask(self, command: str, programs: list[str] | None) -> str | None:
        if programs is None and command in self.approved_commands:
            return None
        pending = [p for p in programs or () if not self._allowed(p)]
        if programs is not None and not pending:
            return None
        if self.ask is None:
            return f"no one is available to approve commands; {HOW_TO_ALLOW}."
        label = ", ".join(dict.fromkeys(pending)) if programs is not None else "this command"
        answer = self.ask(command, label)
        if answer == "always":
            self.approved.update(pending)
            if programs is None:
                self.approved_commands.add(command)
            return None
        if answer == "once":
            return None
        return "the user declined to run it. Ask them, or continue without running it."
