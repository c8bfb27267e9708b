"""Settings in the project's own git configuration that make git run a program.

A repository that arrives with its `.git/` directory (an archive of a project, a copied
checkout) brings its `.git/config`, and git obeys it: `core.fsmonitor` runs on `git
status`, a `diff.external` or a `textconv` driver on `git diff` and `git log -p`, a
`clean` filter on `git status` and `git add`. `planted(root)` names the first such
setting in the configuration of the repository at `root` (following a `.git` file to its
git directory, and a worktree's `commondir`), or a line Swival cannot read, for the
policy to ask about git commands when no sandbox contains them. Hooks (`.git/hooks/`,
`core.hooksPath`) and the editors are left out: they run on commits, merges and
checkouts, as in any repository the user works in.
"""

from __future__ import annotations

import re
from pathlib import Path

# section -> keys (lower case) whose value git runs as a program; "*": any subsection's key.
RUNS = {
    "core": {"fsmonitor", "sshcommand", "gitproxy", "askpass"},
    "diff": {"external", "*textconv", "*command"},
    "filter": {"*clean", "*smudge", "*process"},
    "merge": {"*driver"},
    "gpg": {"program", "*program"},
    "credential": {"helper", "*helper"},
    "remote": {"*uploadpack", "*receivepack", "*proxy"},
    "include": {"path"},
    "includeif": {"*path"},
    "alias": set(),  # every alias: `!cmd`, or options such as `-c` before a command
}
WHAT = {"include": "another configuration file git reads",
        "includeif": "another configuration file git reads",
        "alias": "a command of its own, which can run a program"}
BOOLEAN = {"", "true", "false", "yes", "no", "on", "off", "1", "0"}  # fsmonitor=true is git's own
HEADER = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\](.*)$')
ENTRY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
LARGEST = 1 << 20  # a config file larger than this is not read: it is asked about


def planted(root: Path) -> str | None:
    """The first setting of the repository at `root` that makes git run a program, in
    words for a person; None when there is none (or no repository)."""
    for config in _config_files(root / ".git"):
        try:
            if config.stat().st_size > LARGEST:
                return f"`{config}`, too large for Swival to check"
            text = config.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"`{config}`, which Swival could not read ({exc.strerror or exc})"
        found = _setting(text)
        if found:
            return f"`{config}` setting {found}"
    return None


def _config_files(dot_git: Path) -> list[Path]:
    """The repository's own config files: `config` and `config.worktree` in its git
    directory and, for a worktree, in the common directory."""
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
    return [f / name for f in folders for name in ("config", "config.worktree")]


def _setting(text: str) -> str | None:
    """The first setting in `text` that makes git run a program (`core.fsmonitor`, with
    what it does), or a line Swival cannot read, or None."""
    section, sub = "", ""
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
            return f"a line Swival cannot read ({raw.strip()[:60]!r})"
        key, value = entry.group(1).lower(), (entry.group(2) or "").strip().strip('"')
        wanted = RUNS.get(section, set())
        alias = section == "alias" and not sub
        if (alias or ("*" + key if sub else key) in wanted) and not (
                (section, key) == ("core", "fsmonitor") and value.lower() in BOOLEAN):
            name = ".".join(p for p in (section, sub, key) if p)
            return f"`{name}` ({WHAT.get(section, 'a program git runs')})"
    return None
