"""Settings in the project's own git configuration that make git run a program.

A repository that arrives with its `.git/` directory (an archive of a project, a copied
checkout) brings its `.git/config`, and git obeys it: `core.fsmonitor` runs on `git
status`, a `diff.external` or a `textconv` driver on `git diff` and `git log -p`, a
`clean` filter on `git status` and `git add`. `planted(root)` names the first such
setting in the configuration of the repository at `root` (following a `.git` file to its
git directory, and a worktree's `commondir`), or a line Swival cannot read, for the
policy to ask about git commands when no sandbox contains them.

Hooks run too, and not only on commits: `git status` runs `post-index-change` when it
refreshes the index. `hook(root, sub)` names a hook `git SUB` may run: for a command that
only reads, that one; for any other, every hook in the git directory's `hooks/` or the
repository's `core.hooksPath` (samples and files that are not executable do not run).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# section -> keys (lower case) whose value git runs as a program; "*": any subsection's key.
RUNS = {
    "core": {"fsmonitor", "sshcommand", "gitproxy", "askpass", "pager", "editor",
             "alternaterefscommand"},
    "submodule": {"*update"},  # only `!command`: checkout, rebase, merge, none are git's
    "protocol": {"allow", "*allow"},  # can let `ext::command` addresses run commands
    "imap": {"tunnel"},
    "sequence": {"editor"},
    "pager": set(),  # every `pager.CMD = program`; true/false only switch it on or off
    "man": {"viewer", "*cmd", "*path"},
    "browser": {"*cmd", "*path"},
    "web": {"browser"},
    "help": {"browser", "format"},
    "diff": {"external", "*textconv", "*command"},
    "filter": {"*clean", "*smudge", "*process"},
    "merge": {"*driver"},
    "gpg": {"program", "*program", "*defaultkeycommand"},
    "credential": {"helper", "*helper"},
    "remote": {"*uploadpack", "*receivepack", "*proxy", "*vcs"},
    "include": {"path"},
    "includeif": {"*path"},
    "alias": set(),  # every alias: `!cmd`, or options such as `-c` before a command
}
WHAT = {"include": "another configuration file git reads",
        "includeif": "another configuration file git reads",
        "alias": "a command of its own, which can run a program"}
# Values that run nothing: core.fsmonitor = true is git's own daemon, help.format = man
# shows a manual page (web starts a browser).
HARMLESS = {("core", "fsmonitor"): "boolean", ("help", "format"): {"man", "info", ""}}
BOOLEAN = {"", "true", "false", "yes", "no", "on", "off", "1", "0"}
HEADER = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\](.*)$')
ENTRY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
READS_ONLY = frozenset({
    "status", "log", "diff", "show", "blame", "annotate", "grep", "ls-files", "ls-tree",
    "rev-parse", "rev-list", "describe", "shortlog", "cat-file", "whatchanged", "name-rev",
    "merge-base", "for-each-ref", "show-ref", "diff-tree", "diff-index", "diff-files",
    "range-diff", "cherry", "check-ignore", "check-attr", "show-branch", "help", "version",
    "var", "count-objects", "verify-commit", "verify-tag",
})
SUBMODULES = 200  # submodule git directories looked at
SKIPPED = frozenset({"objects", "refs", "logs", "hooks", "info", "lfs", "worktrees"})
LARGEST = 1 << 20  # a config file larger than this is not read: it is asked about


def planted(root: Path) -> str | None:
    """The first setting of the repository at `root` that makes git run a program, in
    words for a person; None when there is none (or no repository)."""
    for config, text in _configs(root):
        found = text if config is None else _setting(text)
        if found:
            return found if config is None else f"`{config}` setting {found}"
    return None


def hook(root: Path, sub: str) -> str | None:
    """A hook of the repository at `root` that `git SUB` may run, in words for a person:
    for a subcommand that only reads, `post-index-change` (git runs it when `git status`
    refreshes the index); for any other, every hook. Hooks live in the git directory's
    `hooks/` or where the repository's `core.hooksPath` says."""
    folders = [folder / "hooks" for folder in _git_dirs(root / ".git")]
    for config, text in _configs(root):
        if config is not None:
            folders += [root / Path(p).expanduser() for p in _values(text, "core", "hookspath")]
    names = ("post-index-change",) if sub in READS_ONLY else None
    for folder in folders:
        try:
            found = sorted(p for p in folder.iterdir() if not p.name.endswith(".sample")
                           and (names is None or p.name in names) and os.access(p, os.X_OK)
                           and p.is_file())
        except OSError:
            continue
        if found:
            return f"the hook `{found[0]}`, which git runs"
    return None


def _configs(root: Path) -> list[tuple[Path | None, str]]:
    """(file, text) for each of the repository's config files; (None, why) for one that
    cannot be checked."""
    out: list[tuple[Path | None, str]] = []
    for config in [f / name for f in _git_dirs(root / ".git")
                   for name in ("config", "config.worktree")]:
        try:
            if config.stat().st_size > LARGEST:
                out.append((None, f"`{config}`, too large for Swival to check"))
            else:
                out.append((config, config.read_text(encoding="utf-8", errors="replace")))
        except FileNotFoundError:
            continue
        except OSError as exc:
            out.append((None, f"`{config}`, which Swival could not read "
                              f"({exc.strerror or exc})"))
    return out


def _git_dirs(dot_git: Path) -> list[Path]:
    """The repository's git directory, for a worktree its common directory, and the git
    directories of its submodules (`modules/NAME/`; `git status` runs git in each)."""
    folder = dot_git
    if dot_git.is_file():
        try:
            line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return []
        if not line.startswith("gitdir:"):
            return []
        folder = (dot_git.parent / line[len("gitdir:"):].strip()).resolve()
    folders = [folder]
    try:
        common = (folder / "commondir").read_text(encoding="utf-8").strip()
        folders.append((folder / common).resolve())
    except OSError:
        pass
    return folders + [m for f in folders for m in _submodules(f / "modules")]


def _submodules(top: Path) -> list[Path]:
    """The git directories below `top` (at most SUBMODULES), without walking their
    objects, refs and logs, which can hold many thousands of files."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(top):
        if "config" in files:
            found.append(Path(folder))
            if len(found) >= SUBMODULES:
                break
        subfolders[:] = [d for d in subfolders if d not in SKIPPED]
    return found


def _entries(text: str) -> list[tuple[str, str, str, str]]:
    """(section, subsection, key, value) of each setting, section and key in lower case.
    Raises ValueError naming a line Swival cannot read."""
    section, sub = "", ""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        header = HEADER.match(line)
        if header:
            section, _, dotted = header.group(1).partition(".")
            section, sub = section.lower(), header.group(2) or dotted
            line = header.group(3).strip()
        if not line or line.startswith(("#", ";")):
            continue
        entry = ENTRY.match(line)
        if entry is None or line.endswith("\\"):
            raise ValueError(f"a line Swival cannot read ({raw.strip()[:60]!r})")
        out.append((section, sub, entry.group(1).lower(),
                    (entry.group(2) or "").strip().strip('"')))
    return out


def _values(text: str, section: str, key: str) -> list[str]:
    try:
        return [v for s, sub, k, v in _entries(text) if (s, sub, k) == (section, "", key)]
    except ValueError:
        return []


def _setting(text: str) -> str | None:
    """The first setting in `text` that makes git run a program (`core.fsmonitor`, with
    what it does), or a line Swival cannot read, or None."""
    try:
        entries = _entries(text)
    except ValueError as error:
        return str(error)
    for section, sub, key, value in entries:
        wanted = RUNS.get(section, set())
        any_key = section in ("alias", "pager") and not sub
        harmless = HARMLESS.get((section, key), "boolean" if section == "pager" else ())
        if harmless == "boolean":
            harmless = BOOLEAN
        if section == "submodule" and not value.startswith("!"):
            continue
        if (any_key or ("*" + key if sub else key) in wanted) and value.lower() not in harmless:
            name = ".".join(p for p in (section, sub, key) if p)
            return f"`{name}` ({WHAT.get(section, 'a program git runs')})"
    return None
