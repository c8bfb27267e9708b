"""Arguments that make an allowed program run other code, or plant code to run later.

`risk(words)` looks at one simple command (program and literal arguments) and names,
for a person, what needs approval even when the program is on the allowlist:
`git -c`, `find -exec`, `tar --checkpoint-action`, `rsync -e`, `zip -TT`, `sed`'s `e`
and `w` commands, `awk`'s `system()`, `npm install`,
`make SHELL=…`, and programs whose whole job is to run another one (`xargs`, `env CMD`,
`timeout`, shells). Long options are matched however abbreviated (`--exe` is `--exec`)
and short-option clusters are read whole (`env -iS'cmd'`), as the programs read them
(swival/tools/argv.py). The files a command line tells a program to write are found by
program_writes. What a repository's own configuration makes a program do (`.git/config`,
a Makefile, package.json scripts) is beyond this table: the OS sandbox contains it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePath

from swival.tools import archive_writes, sed_script
from swival.tools.argv import (
    cluster_values,
    in_cluster,
    is_cluster,
    long_option,
    option_values,
)

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
    "npx", "pnpx", "bunx", "jobs", "compgen",
})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh",
                    "busybox"})
GIT_QUIET_GLOBALS = frozenset({
    "--no-pager", "-P", "-p", "--paginate", "--no-replace-objects", "--literal-pathspecs",
    "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks",
    "--version", "--help", "-v", "-h",
})  # not --bare: it makes git use the current directory's config, which a command wrote
GIT_ELSEWHERE = ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix")
GIT_RUNNING_COMMANDS = frozenset({
    "filter-branch", "filter-repo", "difftool", "mergetool", "hook", "send-email", "daemon",
    "instaweb", "web--browse", "credential", "upload-pack", "receive-pack", "maintenance",
    "fsmonitor--daemon", "p4", "svn", "cvsimport", "cvsserver", "cvsexportcommit",
    "archimport", "quiltimport",
})
GIT_RUNNING_PREFIXES = ("credential-", "remote-")  # credential-store, remote-ext ...
GIT_RUNNING_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "--template",
                       "--open-files-in-pager", "--ext-diff", "--extcmd", "--tool")
# Options of a subcommand that a dangerous option's name starts with: git takes an
# exact name before an abbreviation (`git format-patch --to`, `checkout-index --temp`).
GIT_EXACT = {"format-patch": ("--to",), "checkout-index": ("--temp",)}
# Short options that run a program or set configuration, per subcommand (`rebase -x`).
GIT_RUNNING_SHORT = {"rebase": "x", "clone": "uc", "ls-remote": "u", "grep": "O"}
GIT_CONFIG_READS = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color",
                    "--get-colorbool", "--list")
GIT_CONFIG_WRITES = ("--add", "--unset", "--unset-all", "--replace-all", "--edit",
                     "--rename-section", "--remove-section")
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
MAKE_CODE_LONG = ("--file", "--makefile", "--eval", "--directory", "--include-dir")
ENV_VALUED = ("--unset", "--chdir", "--split-string")
# Options whose names a dangerous option's starts with, and that the program takes as
# themselves (`tar --checkpoint=10` sets how often, `--checkpoint-action` what runs).
RUNNING_EXACT = {"tar": ("--checkpoint",)}
# Options that make a program run another one: program -> {option: what it runs}. Long
# options count however abbreviated, short letters anywhere in a cluster (and in tar's
# old-style first word, `tar cIf prog a.tar`); zip's `-TT` is one two-letter option.
RUNNING_OPTIONS = {
    "sort": {"--compress-program": "a program to compress its temporary files"},
    "install": {"--strip-program": "a program to strip what it installs"},
    "tar": {"--checkpoint-action": "a command at its checkpoints",
            "--use-compress-program": "a program to compress or expand the archive",
            "-I": "a program to compress or expand the archive",
            "--to-command": "a command for each file it extracts",
            "--info-script": "a script at the end of each volume",
            "--new-volume-script": "a script at the end of each volume",
            "-F": "a script at the end of each volume",
            "--rsh-command": "a program to reach a remote archive",
            "--rmt-command": "a program to reach a remote archive"},
    "rsync": {"--rsh": "a program to reach the other side", "-e": "a program to reach the "
              "other side", "--rsync-path": "a program on the other side",
              "--remote-option": "options of the other side", "-M": "options of the other "
              "side"},
    "zip": {"--unzip-command": "a command to test the archive",
            "-TT": "a command to test the archive"},
}
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
    return (rule(args) if rule else None) or archive_writes.risk(name, args)


def _env_runs(args: list[str]) -> bool:
    """Whether GNU env's arguments name a program to run: an operand that is not a
    `NAME=value` assignment, or `-S`/`--split-string` (also inside a cluster such as
    `-iS'cmd'`, or abbreviated)."""
    skip = ended = False
    for arg in args:
        if skip:
            skip = False
        elif ended or not arg.startswith("-") or arg == "-":
            if arg != "-" and "=" not in arg:
                return True
        elif arg == "--":
            ended = True
        elif arg.startswith("--"):
            option = long_option(arg, ENV_VALUED)
            if option == "--split-string":
                return True
            skip = option is not None and "=" not in arg
        elif is_cluster(arg):
            options = cluster_values(arg, "uCS")
            if any(letter == "S" for letter, _ in options):
                return True
            skip = options[-1][1] == ""
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
    if sub in GIT_RUNNING_COMMANDS or sub.startswith(GIT_RUNNING_PREFIXES):
        return f"`git {sub}`, which runs other programs"
    if (sub, rest[:1]) in (("bisect", ["run"]), ("submodule", ["foreach"])):
        return f"`git {sub} {rest[0]}`, which runs a command"
    if sub == "help" and any(in_cluster(a, "w") or long_option(a, ("--web",)) for a in rest):
        return "`git help --web`, which starts a web browser"
    if sub == "config" and not _git_config_reads(rest):
        return "`git config` in a form that changes configuration (settings can run programs)"
    dangerous = GIT_RUNNING_OPTIONS + (("--config",) if sub == "clone" else ())
    for arg in rest[:rest.index("--")] if "--" in rest else rest:
        written = arg.split("=", 1)[0]
        option = None if written in GIT_EXACT.get(sub, ()) else long_option(arg, dangerous)
        letter = in_cluster(arg, GIT_RUNNING_SHORT.get(sub, ""))
        if option or letter:
            return f"`git {sub} {written}`{_meaning(written, option)}, which can run programs"
    return _git_path_risk(sub, rest)


def _meaning(written: str, option: str | None) -> str:
    """The note ` (short for --exec)` when `written` abbreviates `option`."""
    return f" (short for {option})" if option and option != written else ""


def _git_path_risk(sub: str, rest: list[str]) -> str | None:
    """git arguments that write where the path checks cannot follow."""
    if sub == "checkout-index":
        odd = [p for p in option_values(rest, "", ("--prefix",)) if not p.endswith("/")]
        if odd:
            return (f"`git checkout-index --prefix={odd[0]}`, a prefix git glues to each file "
                    "name (only a directory ending in / can be checked)")
    if sub == "apply" and any(long_option(a, ("--unsafe-paths",)) for a in rest):
        return "`git apply --unsafe-paths`, which writes outside the repository"
    if sub == "clean" and any(in_cluster(a, "xX") for a in rest):
        return ("`git clean -x`, which also deletes ignored files, Swival's own state in "
                ".swival/ among them")
    return None


def _git_config_reads(rest: list[str]) -> bool:
    options = [a for a in rest if a.startswith("-")]
    if any(long_option(a, GIT_CONFIG_WRITES) or in_cluster(a, "e") for a in options):
        return False
    return rest[:1] in (["get"], ["list"]) or any(
        long_option(a, GIT_CONFIG_READS) or in_cluster(a, "l") for a in options)


def _find(args: list[str]) -> str | None:
    action = next((a for a in args if a in FIND_ACTIONS), None)
    return f"`find {action}`, which {FIND_ACTIONS[action]}" if action else None


def _make(args: list[str]) -> str | None:
    for arg in args:
        if "=" in arg and not arg.startswith("-"):
            return f"`make {arg}`, a variable override that changes what make runs"
        option = long_option(arg, MAKE_CODE_LONG)
        if option or in_cluster(arg, "fECI"):
            written = arg.split("=", 1)[0]
            return f"`make {arg}`{_meaning(written, option)}, which runs code from another makefile"
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
    """bash reads options up to the first word that is not one: `-v NAME` or `-vNAME`."""
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            return None
        if arg.startswith("-v"):
            return "`printf -v`, which can run code hidden in a variable name"
    return None


def _running(name: str) -> Callable[[list[str]], str | None]:
    """The rule for a program whose options in RUNNING_OPTIONS run another program."""
    table = RUNNING_OPTIONS[name]
    longs = tuple(o for o in table if o.startswith("--"))
    letters = "".join(o[1] for o in table if len(o) == 2)
    two = tuple(o for o in table if len(o) == 3)  # zip's -TT

    def rule(args: list[str]) -> str | None:
        for k, arg in enumerate(args[:args.index("--")] if "--" in args else args):
            written = arg.split("=", 1)[0]
            exact = written in RUNNING_EXACT.get(name, ())
            option = None if exact else long_option(arg, longs) or next(
                (o for o in two if arg.startswith(o)), None)
            old_style = name == "tar" and k == 0 and not arg.startswith("-")
            letter = in_cluster("-" + arg if old_style else arg, letters)
            if option in two:
                return f"`{name} {option}`, which runs {table[option]}"
            if option or letter:
                what = table[option or f"-{letter}"]
                shown = written if option else f"-{letter}"
                return f"`{name} {shown}`{_meaning(written, option)}, which runs {what}"
        return None

    return rule


# `host:path` (no slash before the colon): tar and rsync reach another machine for it,
# through rsh or ssh, unless tar is told `--force-local`.
REMOTE_OPERAND = re.compile(r"^[^/:=-][^/:=]*:")


def _remote(name: str, rule: Callable[[list[str]], str | None]
            ) -> Callable[[list[str]], str | None]:
    """`rule`, and a remote archive or destination named as `host:path` asks."""

    def checked(args: list[str]) -> str | None:
        found = rule(args)
        if found or (name == "tar" and any(
                len(a) >= 7 and "--force-local".startswith(a) for a in args)):
            return found
        remote = next((a for a in args if any(
            REMOTE_OPERAND.match(v) for v in _operands(a))), None)
        if remote is not None:
            return f"`{name}` naming `{remote}`, which it reaches on another machine " \
                   "through a remote shell"
        return None

    return checked


def _operands(arg: str) -> list[str]:
    """What `arg` may name as a file: itself, a long option's `=value`, and what follows
    `f` in a short-option cluster (`-fhost:a.tar`)."""
    if arg.startswith("--"):
        return arg.split("=", 1)[1:]
    if is_cluster(arg) and "f" in arg:
        return [arg[arg.index("f") + 1:]]
    return [] if arg.startswith("-") else [arg]


RULES: dict[str, Callable[[list[str]], str | None]] = {
    "git": _git, "find": _find, "make": _make, "gmake": _make, "rg": _rg,
    "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk,
    "sed": sed_script.risk, "gsed": sed_script.risk,
    "test": _test, "[": _test, "printf": _printf,
    **{name: _running(name) for name in RUNNING_OPTIONS},
    "tar": _remote("tar", _running("tar")), "rsync": _remote("rsync", _running("rsync")),
}
