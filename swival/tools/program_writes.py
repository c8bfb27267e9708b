"""Files a program writes because its command line names them, and programs that can
create or move links.

`written_files(words)` lists the paths one simple command tells its program to create,
change, move, remove or re-permission: the operands of `cp`, `mv`, `ln`, `install`,
`touch`, `mkdir`, `chmod`, `rm`, `tee`, ... (for `cp` and `install` only the destination,
unless they make links), the files of `sed -i`, `sort -o`, `uniq IN OUT`, `dd of=`, and
git's own: `--output`, `-o`, `--separate-git-dir`, the directory of `git init`, `git
clone`'s destination, `git worktree` paths, `git bundle create`'s file, `git
checkout-index --prefix`, the local repository of `git push` and `git remote add`; for a
copy into a directory, each source's name there; for tar, zip, unzip and rsync what
archive_writes finds. The policy checks each like an output redirection;
`changes_itself` tells which programs may not name a workspace directory itself (also
`cp -r src/. dst`, which pours a directory's contents into it), and `unknown_option`
finds a long option a writer is not known to take.

`replaces_state(words)` says why a git command may replace Swival's own `.swival/` with
what a commit holds (it updates the work tree, and git removes ignored files in the way);
the policy asks about it when no sandbox keeps `.swival/` read-only.

`makes_links(words)` says whether the command can create, replace or move a symlink or a
hard link (`ln`, `cp`, `mv`, archive extractors, git commands that update the work tree):
a path checked before such a command ran may lead elsewhere after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from swival.tools import archive_writes, sed_script
from swival.tools.argv import (
    cluster_values,
    in_cluster,
    is_cluster,
    long_option,
    operands,
    option_values,
)


@dataclass(frozen=True)
class Writer:
    """How one program's command line names what it writes. `short`/`longs`: the options
    taking a value (skipped when finding operands); `flags`: its other long options (an
    optional value is given with `=`), so that any long option outside both is unknown;
    `targets`: those whose value is a written directory (`-t DIR`); `operands`: which
    operands are written ("all"; "last", the destination; "owner": all but an owner
    given first; "mode": all that are not a mode); `every`: options after which every
    operand is written (a copied source becomes a link to it; `install -d` creates each
    one)."""

    short: str = ""
    longs: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    operands: str = "all"
    every: tuple[str, ...] = ()


COPY_LONGS = ("--target-directory", "--suffix")
TARGETS = ("-t", "--target-directory")
CHANGING = ("--changes", "--no-preserve-root", "--preserve-root", "--quiet", "--silent",
            "--recursive", "--verbose")
MOVING = ("--backup", "--force", "--interactive", "--no-clobber", "--no-target-directory",
          "--verbose", "--debug")
WRITERS = {
    "cp": Writer("tS", (*COPY_LONGS, "--no-preserve", "--sparse"), (
        *MOVING, "--archive", "--attributes-only", "--context", "--copy-contents",
        "--dereference", "--link", "--no-dereference", "--one-file-system", "--parents",
        "--preserve", "--recursive", "--reflink", "--remove-destination",
        "--strip-trailing-slashes", "--symbolic-link", "--update", "--keep-directory-symlink",
    ), TARGETS, "last", ("-l", "--link", "-s", "--symbolic-link")),
    "install": Writer("gmoSt", ("--group", "--mode", "--owner", "--strip-program",
                                *COPY_LONGS), (
        *MOVING, "--compare", "--context", "--directory", "--preserve-context",
        "--preserve-timestamps", "--strip",
    ), TARGETS, "last", ("-d", "--directory")),
    "mv": Writer("tS", COPY_LONGS, (*MOVING, "--context", "--strip-trailing-slashes",
                                    "--update", "--exchange", "--no-copy"), TARGETS),
    "ln": Writer("tS", COPY_LONGS, (*MOVING, "--directory", "--logical", "--no-dereference",
                                    "--physical", "--relative", "--symbolic"), TARGETS),
    "link": Writer(), "unlink": Writer(),
    "rm": Writer(flags=("--dir", "--force", "--interactive", "--no-preserve-root",
                        "--one-file-system", "--preserve-root", "--recursive", "--verbose")),
    "rmdir": Writer(flags=("--ignore-fail-on-non-empty", "--parents", "--verbose")),
    "touch": Writer("drt", ("--date", "--reference", "--time"),
                    ("--no-create", "--no-dereference")),
    "mkdir": Writer("m", ("--mode",), ("--context", "--parents", "--verbose")),
    "mkfifo": Writer("m", ("--mode",), ("--context",)),
    "mknod": Writer("m", ("--mode",), ("--context",)),
    "truncate": Writer("rs", ("--reference", "--size"), ("--io-blocks", "--no-create")),
    "shred": Writer("ns", ("--iterations", "--size", "--random-source"),
                    ("--exact", "--force", "--remove", "--verbose", "--zero")),
    "chmod": Writer(longs=("--reference",), flags=(*CHANGING, "--dereference",
                    "--no-dereference"), operands="mode"),
    "chown": Writer(longs=("--reference", "--from"), flags=(*CHANGING, "--dereference",
                    "--no-dereference"), operands="owner"),
    "chgrp": Writer(longs=("--reference",), flags=(*CHANGING, "--dereference",
                    "--no-dereference"), operands="owner"),
    "tee": Writer(flags=("--append", "--ignore-interrupts", "--output-error")),
}
EVERYWHERE = ("--help", "--version")
_CLAUSE = r"([ugoa]*([-+=]([rwxXst]*|[ugo]))+|[-+=]?[0-7]+)"
MODE = re.compile(rf"^{_CLAUSE}(,{_CLAUSE})*$")
GIT_OUTPUTS = ("--output", "--output-directory", "--separate-git-dir", "--export-marks",
               "--object-dir")
GIT_SHORT_OUTPUT = frozenset({"archive", "format-patch", "index-pack", "bugreport",
                              "diagnose"})
# Options of init, clone, worktree, bundle and checkout-index that take the next word.
GIT_VALUED = ("bBcjou", ("--branch", "--origin", "--reference", "--reference-if-able",
                         "--depth", "--template", "--separate-git-dir", "--reason",
                         "--prefix", "--upload-pack", "--config", "--jobs",
                         "--initial-branch", "--shallow-since", "--shallow-exclude",
                         "--filter", "--server-option", "--bundle-uri", "--stage"))
GIT_GLOBAL_VALUED = ("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env",
                     "--exec-path", "--super-prefix")
# git commands that leave the work tree's links alone; every other one may check out
# files, symlinks among them, or move them.
GIT_KEEPS_WORKTREE = frozenset({
    "status", "log", "diff", "show", "blame", "annotate", "grep", "ls-files", "ls-tree",
    "rev-parse", "rev-list", "branch", "tag", "describe", "shortlog", "cat-file", "config",
    "remote", "fetch", "add", "commit", "rm", "clean", "reflog", "whatchanged",
    "count-objects", "fsck", "gc", "format-patch", "archive", "bundle", "help", "version",
    "var", "name-rev", "merge-base", "for-each-ref", "show-ref", "notes", "diff-tree",
    "diff-index", "diff-files", "range-diff", "cherry", "check-ignore", "check-attr",
    "hash-object", "verify-commit", "verify-tag", "show-branch", "push", "init",
})
# git commands that update another directory's work tree, if any, and subcommands that
# only look (`git stash list`); `git reset` without --hard/--merge/--keep keeps the tree.
GIT_OWN_TREE = frozenset({"worktree", "clone", "help", "version"})
GIT_ONLY_LOOKS = {"stash": [["list"], ["show"]], "submodule": [["status"], ["summary"]],
                  "bisect": [["log"], ["visualize"], ["view"], ["terms"]],
                  "sparse-checkout": [["list"]], "notes": [["list"], ["show"]]}
# git push's options that take the next word (the first operand is the repository).
GIT_PUSH_VALUED = ("o", ("--push-option", "--repo", "--receive-pack", "--exec"))
CHANGES_ITSELF = frozenset({"rm", "rmdir", "unlink", "chmod", "chown", "chgrp", "shred",
                            "truncate"})
LINK_MAKERS = frozenset({"ln", "link", "cp", "mv", "rename", "rsync", "tar", "bsdtar",
                         "unzip", "cpio", "pax", "7z", "7za", "patch"})


def written_files(words: Sequence[str]) -> tuple[str, ...]:
    """Paths (files or directories; for `git checkout-index --prefix` a directory and the
    files under it) that the command line tells the program to write."""
    name, args = PurePath(words[0]).name, list(words[1:])
    special = SPECIAL.get(name)
    archived = archive_writes.written(name, args)
    if archived is not None:
        return tuple(archived)
    if special is not None:
        return tuple(special(args))
    writer = WRITERS.get(name)
    return tuple(_writer_paths(writer, args)) if writer else ()


def unknown_option(words: Sequence[str]) -> str | None:
    """A long option of a program in WRITERS that it is not known to take, named for a
    person, or None: an option read wrongly could hide what the program writes."""
    name, args = PurePath(words[0]).name, list(words[1:])
    writer = WRITERS.get(name)
    if writer is None:
        return None
    known = (*writer.longs, *writer.flags, *EVERYWHERE)
    for arg in args[:args.index("--")] if "--" in args else args:
        if arg.startswith("--") and long_option(arg, known) is None:
            return (f"`{name} {arg.split('=', 1)[0]}`, an option Swival cannot tell what "
                    f"{name} writes with")
    return None


def makes_links(words: Sequence[str]) -> bool:
    """Whether the command may create, replace or move a symlink or hard link."""
    name, args = PurePath(words[0]).name, list(words[1:])
    if name == "git":
        sub = git_subcommand(args)
        return sub is not None and sub[0] not in GIT_KEEPS_WORKTREE
    return name in LINK_MAKERS


def _writer_paths(writer: Writer, args: list[str]) -> list[str]:
    """The paths `args` tell a program described by `writer` to write."""
    given = operands(args, writer.short, writer.longs)
    options = args[:args.index("--")] if "--" in args else args
    every = any(_gives(a, writer.every) for a in options if a.startswith("-"))
    targets = option_values(args, _letters(writer.targets), _longs(writer.targets))
    reference = any(long_option(a, ("--reference",)) for a in options)
    if every or writer.operands == "all" or reference:
        paths = given
    elif writer.operands == "last":
        paths = [] if targets else given[-1:]
    elif writer.operands == "owner":
        paths = given[1:]
    else:  # "mode": what is not a mode is a file
        paths = [p for p in given if not MODE.match(p)]
    if writer.targets and (targets or len(given) > 1):
        # A destination directory gets each source under its own name (`cp -r x/.git .`).
        into, sources = (targets, given) if targets else (given[-1:], given[:-1])
        paths += [f"{folder}/{PurePath(source).name}" for folder in into for source in sources
                  if PurePath(source).name not in ("", ".", "..")]
    paths += targets
    suffixes = option_values(args, "S" if "S" in writer.short else "", ("--suffix",))
    return paths + [p + s for p in paths for s in suffixes]  # the backup copies' names


def _gives(arg: str, options: tuple[str, ...]) -> bool:
    """Whether `arg` gives one of `options` (`-l` letters, `--long` names)."""
    letters = _letters(options)
    return bool(long_option(arg, _longs(options))) or (
        is_cluster(arg) and any(letter in letters for letter, _ in cluster_values(arg, "")))


def _letters(options: tuple[str, ...]) -> str:
    return "".join(o[1] for o in options if len(o) == 2)


def _longs(options: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(o for o in options if o.startswith("--"))


def _sed(args: list[str]) -> list[str]:
    parsed = sed_script.parse_args(args)
    return parsed.files if parsed.in_place else []


def _uniq(args: list[str]) -> list[str]:
    """`uniq [IN [OUT]]`: OUT is written. A long option's value may be read as IN."""
    return operands(args, "fsw")[1:]


def _dd(args: list[str]) -> list[str]:
    return [a[3:] for a in args if a.startswith("of=")]


def _sort(args: list[str]) -> list[str]:
    return option_values(args, "o", ("--output",))


def git_subcommand(args: list[str]) -> tuple[str, list[str]] | None:
    """git's subcommand and its arguments, after the global options (None when there is
    no subcommand)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 1 + (args[i] in GIT_GLOBAL_VALUED)
    return (args[i], args[i + 1:]) if i < len(args) else None


def _git(args: list[str]) -> list[str]:
    found = git_subcommand(args)
    sub, rest = found if found else ("", [])
    out = option_values(args, "o" if sub in GIT_SHORT_OUTPUT else "", GIT_OUTPUTS)
    given = operands(rest, *GIT_VALUED)
    if sub in ("push", "remote", "bundle"):
        return out + _git_elsewhere(sub, rest)
    if sub == "init":
        out += given or ["."]  # no directory: the current one
    elif sub in ("clone", "worktree"):
        out += given[1:]  # clone: the destination, not the source; worktree: after `add` ...
    elif sub == "checkout-index":
        prefixes = option_values(rest, "", ("--prefix",))
        out += prefixes + [p + g for p in prefixes for g in given]
    elif sub in ("merge-file", "pack-objects"):
        out += given[:1]
    return out


def _git_elsewhere(sub: str, rest: list[str]) -> list[str]:
    """What `git push`, `git remote add`/`set-url` and `git bundle create` write: the
    repository pushed to (or later pushed to through the remote) when it is a local
    path, the bundle file."""
    if sub == "bundle":
        given = operands(rest, "", ("--version",))
        return given[1:2] if given[:1] == ["create"] else []
    if sub == "remote":
        given = operands(rest, "tm", ())
        urls = given[2:3] if given[:1] in (["add"], ["set-url"]) else []
    else:
        given = operands(rest, *GIT_PUSH_VALUED)
        urls = given[:1] + option_values(rest, "", ("--repo",))
    return [path for url in urls if (path := _local_path(url)) is not None]


def _local_path(url: str) -> str | None:
    """The directory a git repository address names on this machine (`../r`, `/tmp/r`,
    `file:///tmp/r`, or a remote's name, which resolves inside the workspace), or None
    for a network address (`https://…`, `host:path`)."""
    if url.startswith("file://"):
        return url[len("file://"):] or None
    colon, slash = url.find(":"), url.find("/")
    if "://" in url or (colon > 0 and (slash < 0 or colon < slash)):
        return None
    return url


def replaces_state(words: Sequence[str]) -> str | None:
    """Why a git command may replace Swival's own `.swival/` (or None): it updates the
    work tree from a commit, which may hold a `.swival` file or symlink, and git removes
    ignored files in the way (all of `.swival/` is ignored)."""
    name, args = PurePath(words[0]).name, list(words[1:])
    found = git_subcommand(args) if name == "git" else None
    if found is None or found[0] in GIT_KEEPS_WORKTREE or found[0] in GIT_OWN_TREE:
        return None
    sub, rest = found
    if rest[:1] in GIT_ONLY_LOOKS.get(sub, []) or (sub == "reset" and not any(
            long_option(a, ("--hard", "--merge", "--keep")) for a in rest)) or (
            sub == "checkout-index" and any(long_option(a, ("--prefix", "--temp"))
                                            for a in rest)):
        return None  # checkout-index writes under the prefix (checked), or temporary files
    return (f"`git {sub}`, which updates the work tree from a commit, and could replace "
            "Swival's own .swival/ with what the commit holds there, while no sandbox "
            "keeps it read-only")


def changes_itself(words: Sequence[str]) -> bool:
    """Whether the program changes or removes each path it writes as a whole (`rm -r`,
    `chmod -R`), rather than creating something in it: given the workspace itself, it
    reaches `.git/` and `.swival/` too."""
    name, args = PurePath(words[0]).name, list(words[1:])
    return name in CHANGES_ITSELF or archive_writes.deletes(name, args) or (
        name == "cp" and _copies_contents(args))


def _copies_contents(args: list[str]) -> bool:
    """Whether `cp` copies a directory's contents into the destination (`cp -r src/. dst`,
    `cp -rT src dst`), which then receives whatever the source holds, .git/ included."""
    options = args[:args.index("--")] if "--" in args else args
    if any(in_cluster(a, "T") or long_option(a, ("--no-target-directory",))
           for a in options):
        return True
    given = operands(args, "tS", COPY_LONGS)
    return any(g in (".", "..") or g.endswith(("/.", "/..")) for g in given[:-1])


SPECIAL: dict[str, Callable[[list[str]], list[str]]] = {
    "sed": _sed, "gsed": _sed, "uniq": _uniq, "dd": _dd, "sort": _sort, "git": _git,
}
