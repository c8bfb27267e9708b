"""Writes that may follow a link made earlier in the same command line.

Paths are resolved when a command is checked, so a write or `cd` that runs after a
command that can create, replace or move a symlink or hard link (`ln`, `cp`, `git
checkout`, archive extractors; program_writes.makes_links), or beside it in one pipeline,
may lead elsewhere by then: `after_links` names each such write for a person.
"""

from __future__ import annotations

from swival.tools.program_writes import git_subcommand, makes_links, written_files
from swival.tools.shell_parse import Script, SimpleCommand

DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def after_links(script: Script, joins: list[str]) -> list[str]:
    """Writes and `cd`s that may run after a command that creates or moves links (or
    beside it, in one pipeline): a path checked now may lead elsewhere by then, through
    a link made in between (`ln -s .git/hooks/pre-commit h && git status > h`)."""
    group = 0
    groups = []  # the pipeline each command belongs to
    for i in range(len(script.commands)):
        group += joins[i] != "|"
        groups.append(group)
    makers = [i for i, c in enumerate(script.commands) if makes_links(c.words)]
    found: list[str] = []
    for j, simple in enumerate(script.commands):
        maker = next((i for i in makers if i < j or (i != j and groups[i] == groups[j])),
                     None)
        if maker is None:
            continue
        what = _sensitive(simple)
        if what:
            found.append(f"{what} after `{_program(script.commands[maker])}`, which can "
                         "create or move links: the path may lead elsewhere by then")
    return found


def _sensitive(simple: SimpleCommand) -> str | None:
    """The first write or `cd` of `simple` whose path must not change under it."""
    targets = [r.target for r in simple.redirects
               if r.writes and r.target is not None and r.target not in DEVICES]
    targets += written_files(simple.words)
    if targets:
        return f"writing `{targets[0]}`"
    if simple.words[0] == "cd":
        return f"`{' '.join(simple.words)}`"
    return None


def _program(simple: SimpleCommand) -> str:
    """The program as a person names it: `ln`, or `git checkout` with its subcommand."""
    words = simple.words
    found = git_subcommand(list(words[1:])) if words[0] == "git" else None
    return f"git {found[0]}" if found else words[0]
