"""Arguments that make an allowed program run other code, or plant code to run later.

`risk(words)` looks at one simple command (program and literal arguments) and names,
for a person, what needs approval even when the program is on the allowlist:
`git -c`, `find -exec`, `sed`'s `e` and `w` commands, `awk`'s `system()`, `npm install`,
`make SHELL=…`, and programs whose whole job is to run another one (`xargs`, `env CMD`,
`timeout`, shells). `written_files(words)` lists the files the command line tells the
program to write (`sed -i`, `sort -o`, `tee`, ...), which are checked like redirections.
What a repository's own configuration makes a program do (`.git/config`, a Makefile,
package.json scripts) is beyond this table: the OS sandbox contains it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePath

from swival.tools import sed_script

SHELL_CODE = {
    "eval": "runs its arguments as shell code",
    "source": "runs a file as shell code",
    ".": "runs a file as shell code",
    "exec": "replaces the shell with another program",
}
SHELL_STATE = frozenset({
    "alias", "bind", "builtin", "complete", "coproc", "declare", "enable", "export", "fc",
    "getopts", "hash", "history", "let", "local", "mapfile", "popd", "pushd", "read",
    "readarray", "readonly", "set", "shopt", "trap", "typeset", "ulimit", "umask", "unset",
    "wait",
})
RUNNERS = frozenset({
    "xargs", "nohup", "timeout", "nice", "time", "command", "sudo", "doas", "su", "runuser",
    "watch", "setsid", "stdbuf", "chroot", "ionice", "taskset", "strace", "ltrace", "flock",
    "unbuffer", "parallel", "script", "nsenter", "unshare", "chrt", "systemd-run",
    "npx", "pnpx", "bunx",
})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh",
                    "busybox"})
GIT_QUIET_GLOBALS = frozenset({
    "--no-pager", "-P", "-p", "--paginate", "--no-replace-objects", "--literal-pathspecs",
    "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks",
    "--bare", "--version", "--help", "-v", "-h",
})
GIT_ELSEWHERE = ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix")
GIT_RUNNING_COMMANDS = frozenset({
    "filter-branch", "difftool", "mergetool", "hook", "send-email", "daemon", "instaweb",
    "web--browse", "credential", "upload-pack", "receive-pack",
})
GIT_RUNNING_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "--template",
                       "--open-files-in-pager", "--ext-diff", "--extcmd", "--tool")
# Short options that run a program or set configuration, per subcommand (`rebase -x`).
GIT_RUNNING_SHORT = {"rebase": "x", "clone": "uc", "ls-remote": "u", "grep": "O"}
GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch",
                              "--get-color", "--get-colorbool", "--list", "-l"})
GIT_CONFIG_WRITES = frozenset({"--add", "--unset", "--unset-all", "--replace-all", "--edit",
                               "-e", "--rename-section", "--remove-section"})
FIND_ACTIONS = {
    "-exec": "runs a program for each file", "-execdir": "runs a program for each file",
    "-ok": "runs a program for each file", "-okdir": "runs a program for each file",
    "-delete": "deletes what it finds", "-fprint": "writes a file",
    "-fprint0": "writes a file", "-fprintf": "writes a file", "-fls": "writes a file",
}
PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun", "pip", "pip3", "uv"})
PACKAGE_QUERIES = frozenset({
    "ls", "list", "ll", "la", "view", "info", "show", "outdated", "help", "search", "why",
    "explain", "root", "prefix", "freeze", "check", "inspect", "hash", "tree",
})
PACKAGE_FLAGS = frozenset({"--version", "-v", "-V", "--help", "-h"})
OUTPUT_OPTIONS = {
    "sort": ("o", ("--output",)),
    "git": ("o", ("--output", "--output-directory")),
}
MAKE_CODE_LONG = ("--file", "--makefile", "--eval", "--directory", "--include-dir")
AWK_RISKS = (
    (re.compile(r"\bsystem\s*\("), "`system()`, which runs a command"),
    (re.compile(r"(?<!\|)\|(?!\|)"), "a `|` pipe to or from a command"),
    (re.compile(r"\bprintf?\b.*>", re.S), "`print >`, which writes a file"),
    (re.compile(r"@"), "an `@` directive, which loads code"),
)


def risk(words: Sequence[str]) -> str | None:
    """What in this command can run other code or plant it, or None. `words[0]` is the
    program (only its last path part is looked at)."""
    name, args = PurePath(words[0]).name, list(words[1:])
    if words[0] in SHELL_CODE:
        return f"`{words[0]}`, which {SHELL_CODE[words[0]]}"
    if name in SHELL_STATE:
        return f"`{name}`, a shell builtin that changes the shell's own state"
    if name in RUNNERS or (name == "env" and _env_runs(args)):
        return f"`{name}`, which runs another program"
    if name in SHELLS:
        return f"`{name}`, which runs shell code"
    if name in PACKAGE_MANAGERS:
        return _package_manager(name, args)
    rule = RULES.get(name)
    return rule(args) if rule else None


def written_files(words: Sequence[str]) -> tuple[str, ...]:
    """Files (for `git format-patch -o`, a directory) that the program writes because the
    command line names them: `sed -i`, `sort -o`, `tee`, `uniq IN OUT`, `git --output`.
    The policy checks them like output redirections."""
    name, args = PurePath(words[0]).name, list(words[1:])
    if name in ("sed", "gsed"):
        parsed = sed_script.parse_args(args)
        return tuple(parsed.files) if parsed.in_place else ()
    if name == "tee":
        return tuple(_operands(args, ()))
    if name == "uniq":  # `uniq [IN [OUT]]`; a long option's value may be read as IN
        return tuple(_operands(args, ("f", "s", "w"))[1:])
    if name in OUTPUT_OPTIONS:
        return tuple(_option_values(args, *OUTPUT_OPTIONS[name]))
    return ()


def _operands(args: list[str], valued: tuple[str, ...]) -> list[str]:
    """The non-option arguments, skipping the value of each short option in `valued`."""
    out: list[str] = []
    skip = False
    for k, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "--":
            return out + args[k + 1:]
        elif arg.startswith("-") and arg != "-":
            skip = not arg.startswith("--") and arg[-1] in valued
        else:
            out.append(arg)
    return out


def _option_values(args: list[str], short: str, longs: tuple[str, ...]) -> list[str]:
    """Values given to the short option letter `short` (`-o F`, `-oF`, `-uo F`) or to
    one of `longs` (`--output F`, `--output=F`)."""
    out = []
    for k, arg in enumerate(args):
        following = args[k + 1:k + 2]
        name, eq, value = arg.partition("=")
        if name in longs:
            out += [value] if eq else following
        elif _short(arg, short):
            rest = arg[arg.index(short) + 1:]
            out += [rest] if rest else following
    return out


def _env_runs(args: list[str]) -> bool:
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-u", "-C", "--unset", "--chdir"):
            skip = True
        elif arg.startswith(("-S", "--split-string")) or not (arg.startswith("-") or "=" in arg):
            return True
    return False


def _package_manager(name: str, args: list[str]) -> str | None:
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub is None and args and all(a in PACKAGE_FLAGS for a in args):
        return None
    if sub in PACKAGE_QUERIES:
        return None
    what = f"{name} {sub}" if sub else name
    return f"`{what}`, which can install packages or run their scripts"


def _git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option = args[i].split("=")[0]
        if option in ("-c", "--config-env"):
            return f"`git {option}`, which sets configuration that can run programs"
        if option in GIT_ELSEWHERE:
            return f"`git {option}`, which points git at another repository or directory"
        if option not in GIT_QUIET_GLOBALS:
            return f"`git {option}` before the subcommand"
        i += 1
    sub, rest = (args[i], args[i + 1:]) if i < len(args) else ("", [])
    return _git_subcommand(sub, rest)


def _git_subcommand(sub: str, rest: list[str]) -> str | None:
    if sub in GIT_RUNNING_COMMANDS:
        return f"`git {sub}`, which runs other programs"
    if (sub, rest[:1]) in (("bisect", ["run"]), ("submodule", ["foreach"])):
        return f"`git {sub} {rest[0]}`, which runs a command"
    if sub == "config" and not _git_config_reads(rest):
        return "`git config` in a form that changes configuration (settings can run programs)"
    for arg in rest:
        option = arg.split("=")[0]
        letters = GIT_RUNNING_SHORT.get(sub, "")
        if option in GIT_RUNNING_OPTIONS or (sub, option) == ("clone", "--config") or any(
                _short(arg, letter) for letter in letters):
            return f"`git {sub} {option}`, which can run programs"
    return None


def _git_config_reads(rest: list[str]) -> bool:
    if any(a in GIT_CONFIG_WRITES for a in rest):
        return False
    return rest[:1] in (["get"], ["list"]) or any(a in GIT_CONFIG_READS for a in rest)


def _short(arg: str, letter: str) -> bool:
    """True when `arg` is a cluster of short options holding `letter` (`-ix` has `x`)."""
    return arg.startswith("-") and not arg.startswith("--") and letter in arg[1:]


def _find(args: list[str]) -> str | None:
    action = next((a for a in args if a in FIND_ACTIONS), None)
    return f"`find {action}`, which {FIND_ACTIONS[action]}" if action else None


def _make(args: list[str]) -> str | None:
    for arg in args:
        if "=" in arg and not arg.startswith("-"):
            return f"`make {arg}`, a variable override that changes what make runs"
        if arg.startswith(MAKE_CODE_LONG) or (
                _short(arg, "f") or _short(arg, "E") or _short(arg, "C") or _short(arg, "I")):
            return f"`make {arg}`, which runs code from another makefile"
    return None


def _awk(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        arg = args[i]
        if arg in ("-F", "-v", "--field-separator", "--assign"):
            i += 2
        elif arg.startswith(("-F", "-v", "--field-separator=", "--assign=")):
            i += 1
        else:
            return f"`awk {arg}`, an option that loads a program or changes what awk runs"
    program = args[i + (args[i:i + 1] == ["--"])] if i < len(args) else ""
    return next((f"awk's {what}" for pattern, what in AWK_RISKS if pattern.search(program)),
                None)


def _rg(args: list[str]) -> str | None:
    found = any(a == "--pre" or a.startswith("--pre=") for a in args)
    return "`rg --pre`, which runs a program on each file" if found else None


def _test(args: list[str]) -> str | None:
    found = any(a in ("-v", "-R") for a in args)
    return "`test -v`, which can run code hidden in a variable name" if found else None


def _printf(args: list[str]) -> str | None:
    return "`printf -v`, which can run code hidden in a variable name" if "-v" in args else None


RULES: dict[str, Callable[[list[str]], str | None]] = {
    "git": _git, "find": _find, "make": _make, "gmake": _make, "rg": _rg,
    "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk,
    "sed": sed_script.risk, "gsed": sed_script.risk,
    "test": _test, "[": _test, "printf": _printf,
}
