"""Reading a program's command line the way GNU getopt and git's parse-options do.

Two habits of those parsers matter to the policy. A long option may be abbreviated to
any prefix that is unique among the program's options (`--exe` is `--exec`; an ambiguous
prefix is an error there, so reading it as the dangerous option costs nothing). And short
options cluster: `-iS'cmd'` is `-i` followed by `-S cmd`, and a letter that takes a value
takes the rest of the word, or else the next word.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def long_option(arg: str, names: Iterable[str]) -> str | None:
    """The first of `names` (long options such as `--exec`) that `arg` spells or
    abbreviates, with or without `=value` (`--exe`, `--exe=x`, `--exec`), else None."""
    if not arg.startswith("--") or len(arg) < 3:
        return None
    given = arg.split("=", 1)[0]
    return next((name for name in names if name.startswith(given)), None)


def is_cluster(arg: str) -> bool:
    """Whether `arg` is a cluster of short options (`-x`, `-ix`), not `-`, `--` or `--long`."""
    return arg.startswith("-") and not arg.startswith("--") and len(arg) > 1


def in_cluster(arg: str, letters: str) -> str | None:
    """The first of `letters` that appears anywhere in the short-option cluster `arg`.
    Anywhere, not only where getopt would read it as an option: a letter inside another
    option's value is found too, which errs on the side of asking."""
    if not is_cluster(arg):
        return None
    return next((c for c in arg[1:] if c in letters), None)


def cluster_values(arg: str, valued: str) -> list[tuple[str, str | None]]:
    """The options of the cluster `arg` in order, as getopt reads them: (letter, None) for
    a flag; (letter, value) for a letter of `valued`, whose value is the rest of the word,
    or "" when the value is the next word."""
    out: list[tuple[str, str | None]] = []
    for k, letter in enumerate(arg[1:], 1):
        if letter in valued:
            out.append((letter, arg[k + 1:]))
            return out
        out.append((letter, None))
    return out


def option_values(args: Sequence[str], short: str, longs: Sequence[str]) -> list[str]:
    """Values given to a short option letter in `short` (`-o F`, `-oF`, `-uo F`) or to one
    of `longs`, however abbreviated (`--output F`, `--outp=F`). A letter anywhere in a
    cluster counts (see `in_cluster`)."""
    out: list[str] = []
    for k, arg in enumerate(args):
        following = list(args[k + 1:k + 2])
        if long_option(arg, longs):
            out += [arg.split("=", 1)[1]] if "=" in arg else following
        elif short and (letter := in_cluster(arg, short)):
            rest = arg[arg.index(letter) + 1:]
            out += [rest] if rest else following
    return out


def operands(args: Sequence[str], short: str = "", longs: Sequence[str] = ()) -> list[str]:
    """The non-option arguments: everything after `--`, and every word not starting with
    `-` (a lone `-` is an operand), skipping the values of the short letters in `short`
    and of the long options in `longs` (abbreviated or not) when they take the next word."""
    out: list[str] = []
    skip = False
    for k, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "--":
            return out + list(args[k + 1:])
        elif arg.startswith("--"):
            skip = "=" not in arg and long_option(arg, longs) is not None
        elif is_cluster(arg):
            skip = any(value == "" for _, value in cluster_values(arg, short))
        else:
            out.append(arg)
    return out
