"""Where archivers and copiers write: tar, zip, unzip and rsync.

`written(name, args)` lists the paths their command lines name for writing: tar's `-C`
directory, its archive when it creates, appends or updates one (and with
`--remove-files` every operand it deletes), its incremental snapshot and index files;
zip's and rsync's every operand (their option syntax has many valued options, so a word
read wrongly as an operand only means one more path checked; `zip -m` and `rsync
--remove-source-files` delete their sources, rsync writes the last one) and the files
and directories their options name; unzip's `-d` directory.

`unpacked(name, args, cwd)` lists the members an extracting tar or unzip would write,
as paths under the directory it extracts to, or None when the archive cannot be listed
(then the command is asked about): a member may be `.git/hooks/pre-commit`, and unzip
follows a symlink already there (`out -> /elsewhere` with a member `out/file` writes
`/elsewhere/file`). GNU tar replaces such a symlink instead, unless told otherwise:
`risk` names the tar and unzip options that write outside the directory (`tar -P`,
`--keep-directory-symlink`, `unzip -:`), and rsync's `-K`, which follows symlinked
directories in the destination.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path, PurePath

from swival.tools.argv import (
    cluster_values,
    in_cluster,
    is_cluster,
    long_option,
    operands,
    option_values,
)
from swival.tools.regular import NotRegularFile, open_regular

MEMBERS_LISTED = 20_000  # an archive with more members than this is asked about
TAR_READ = 256 << 20  # a tar archive is read this far (after decompression) to list it
TAR_VALUED = ("fCbgHIKLNTVXF", ("--file", "--directory", "--listed-incremental",
                                "--index-file", "--volno-file", "--exclude", "--files-from",
                                "--exclude-from", "--transform", "--xform", "--label",
                                "--newer", "--after-date", "--newer-mtime", "--format",
                                "--owner", "--group", "--mode", "--mtime", "--suffix",
                                "--tape-length", "--starting-file", "--blocking-factor",
                                "--record-size", "--use-compress-program"))
# Options that rename members as they are extracted: where they land cannot be listed.
TAR_RENAMES = ("--transform", "--xform", "--one-top-level")
TAR_READS = ("--extract", "--get", "--list", "--diff", "--compare", "--test-label")
TAR_CHANGES = ("--create", "--append", "--update", "--catenate", "--concatenate", "--delete")
RSYNC_WRITES = ("--backup-dir", "--temp-dir", "--partial-dir", "--log-file", "--write-batch",
                "--only-write-batch")
RSYNC_DELETES = ("--delete", "--delete-before", "--delete-during", "--delete-delay",
                 "--delete-after", "--delete-excluded", "--delete-missing-args", "--del",
                 "--remove-source-files")
UNZIP_QUIET_MODES = "cltpvzZ"  # list, test, print, comment: unzip writes no member
RISKS = {
    "tar": ((("--absolute-names",), "P", "writes members at absolute paths or through `..`"),
            (("--keep-directory-symlink",), "", "follows symlinked directories when it "
             "extracts")),
    "unzip": (((), ":^", "writes members through `..` or with control characters"),),
    "rsync": ((("--keep-dirlinks",), "K", "follows symlinked directories in the "
               "destination"),),
}


def written(name: str, args: list[str]) -> list[str] | None:
    """The paths this archiver's or copier's command line names for writing, or None
    when `name` is not one of them."""
    if name in ("tar", "bsdtar"):
        return _tar(args)
    if name in ("zip", "rsync"):
        valued = ("bOTe", ("--output-file", "--temp-path", *RSYNC_WRITES))
        return operands(args) + option_values(args, *valued)
    if name == "unzip":
        return option_values(args, "d", ())
    return None


def deletes(name: str, args: list[str]) -> bool:
    """Whether rsync may change what it writes as a whole: remove from it (`--delete`),
    or copy a directory's contents into it (`src/`, `.`), its .git/ and .swival/ too."""
    if name != "rsync":
        return False
    sources = operands(args)[:-1]
    return any(long_option(a, RSYNC_DELETES) for a in args) or any(
        s in (".", "..") or s.endswith(("/", "/.", "/..")) for s in sources)


def risk(name: str, args: list[str]) -> str | None:
    """An option that makes tar, unzip or rsync write outside where it is pointed."""
    for longs, letters, what in RISKS.get(name, ()):
        for arg in args:
            old_style = name == "tar" and arg is args[0] and not arg.startswith("-")
            option = long_option(arg, longs)
            letter = in_cluster("-" + arg if old_style else arg, letters)
            if option or letter:
                shown = arg.split("=", 1)[0] if option else f"-{letter}"
                return f"`{name} {shown}`, which {what}"
    return None


def _tar(args: list[str]) -> list[str]:
    """tar's `-C` directories, its archive unless it only reads one, and its snapshots.
    The old style (`tar cfC a.tar dir`) gives each valued letter the next word in turn."""
    short, longs = TAR_VALUED
    words = _tar_words(args)
    mode = [a for a in words if a.startswith("-") and not a.startswith("--")]
    reads = any(in_cluster(a, "xtd") for a in mode) or any(
        long_option(a, TAR_READS) for a in words)
    changes = any(in_cluster(a, "cruA") for a in mode) or any(
        long_option(a, TAR_CHANGES) for a in words)
    out = option_values(words, "Cg", ("--directory", "--listed-incremental", "--index-file",
                                      "--volno-file"))
    archives = option_values(words, "f", ("--file",))
    if changes or not reads:
        out += [a for a in archives if a != "-"]
    if any(long_option(a, ("--remove-files",)) for a in words):
        out += operands(words, short, longs)
    return out


def _tar_words(args: list[str]) -> list[str]:
    """tar's arguments with an old-style first word (`cfC a.tar dir`) spelled as options
    (`-fa.tar -Cdir -c`): each valued letter takes the next word in turn."""
    short = TAR_VALUED[0]
    words = list(args)
    if words and not words[0].startswith("-"):
        letters = [c for c in words[0] if c in short]
        values = words[1:1 + len(letters)]
        words = [f"-{c}{v}" for c, v in zip(letters, values, strict=False)] + \
            [f"-{c}" for c in words[0] if c not in short] + words[1 + len(letters):]
    return words


def unpacked(name: str, args: list[str], cwd: Path) -> list[str] | None:
    """The paths an extracting `unzip` or `tar` would write, relative to `cwd`: each
    member of the archive under the directory it extracts to; [] when the command does
    not extract; None when the archive cannot be listed here (missing, stdin, a format
    Python cannot read, too many members or too large)."""
    if name in ("tar", "bsdtar"):
        return _untarred(_tar_words(args), cwd)
    return _unzipped(args, cwd) if name == "unzip" else []


def _untarred(words: list[str], cwd: Path) -> list[str] | None:
    extracts = any(is_cluster(a) and "x" in a for a in words) or any(
        long_option(a, ("--extract", "--get")) for a in words)
    if not extracts:
        return []
    archives = option_values(words, "f", ("--file",))
    into = (option_values(words, "C", ("--directory",)) or ["."])[-1]
    strip = option_values(words, "", ("--strip-components",))
    renames = any(long_option(a, TAR_RENAMES) for a in words)
    if len(archives) != 1 or archives[0] == "-" or renames or not all(
            n.isdigit() for n in strip):
        return None
    names: list[str] = []
    try:
        with open_regular(cwd / archives[0]) as f, tarfile.open(fileobj=f) as archive:
            for member in archive:
                names.append(member.name)
                if len(names) > MEMBERS_LISTED or member.offset > TAR_READ:
                    return None
    except (OSError, NotRegularFile, tarfile.TarError, EOFError, ValueError, RuntimeError):
        return None  # a pipe or device is never opened: the check would wait forever
    cut = int(strip[-1]) if strip else 0
    kept = ["/".join(name.lstrip("/").split("/")[cut:]) for name in names]
    return [f"{into}/{name}" for name in kept if name]


def _unzipped(args: list[str], cwd: Path) -> list[str] | None:
    """unzip's: each member under the `-d` directory; [] when it only lists, tests or
    prints."""
    flags = [letter for a in args if is_cluster(a)
             for letter, _ in cluster_values(a, "dPx")]
    if any(letter in UNZIP_QUIET_MODES for letter in flags):
        return []
    given = operands(args, "dPx")
    if not given:
        return []
    into = (option_values(args, "d", ()) or ["."])[-1]
    for name in (given[0], given[0] + ".zip"):
        try:
            with open_regular(cwd / name) as f, zipfile.ZipFile(f) as archive:
                members = archive.namelist()
        except (OSError, NotRegularFile, zipfile.BadZipFile, ValueError, RuntimeError):
            continue
        if len(members) > MEMBERS_LISTED:
            return None
        if "j" in flags:  # junk paths: each file lands under its own name
            members = [PurePath(m).name for m in members if not m.endswith("/")]
        return [f"{into}/{member.lstrip('/')}" for member in members]
    return None
