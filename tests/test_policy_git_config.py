"""A repository's own git configuration that makes git run a program: without the
sandbox, git commands there need approval (swival/tools/git_config.py)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from swival.tools.base import ToolContext
from swival.tools.git_config import planted
from swival.tools.policy import CommandPolicy, Workspace
from tests.e2e import run_swival
from tests.evidence import record
from tests.fakeserver import FakeServer, text, tools

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

PLANTED = [
    ('[core]\n\tfsmonitor = "touch pwned"\n', "`core.fsmonitor` (a program git runs)"),
    ("[core] fsmonitor = touch pwned\n", "`core.fsmonitor`"),
    ("[CORE]\n\tFSMonitor = ./hook\n", "`core.fsmonitor`"),
    ("[core]\n\tsshCommand = ssh -oProxyCommand=x\n", "`core.sshcommand`"),
    ("[diff]\n\texternal = ./differ\n", "`diff.external`"),
    ('[diff "bin"]\n\ttextconv = ./conv\n', "`diff.bin.textconv`"),
    ('[filter "x"]\n\tclean = ./clean\n', "`filter.x.clean`"),
    ('[filter "x"]\n\tprocess = ./proc\n', "`filter.x.process`"),
    ('[merge "x"]\n\tdriver = ./merge %O %A %B\n', "`merge.x.driver`"),
    ("[credential]\n\thelper = !./steal\n", "`credential.helper`"),
    ("[gpg]\n\tprogram = ./gpg\n", "`gpg.program`"),
    ('[remote "origin"]\n\tuploadpack = ./up\n', "`remote.origin.uploadpack`"),
    ("[include]\n\tpath = ../evil.cfg\n", "another configuration file git reads"),
    ('[includeIf "gitdir:/"]\n\tpath = ../evil.cfg\n', "`includeif.gitdir:/.path`"),
    ("[alias]\n\tst = !touch pwned\n", "`alias.st`"),
    ("[alias]\n\tlg = -c core.pager=./x log\n", "`alias.lg`"),
    ("[core]\n\tfsmonitor = a \\\n\tb\n", "a line Swival cannot read"),
    ("[core]\n\tpager = ./less\n", "`core.pager`"),
    ("[core]\n\teditor = ./vi\n", "`core.editor`"),
    ("[pager]\n\tlog = ./less\n", "`pager.log`"),
    ('[submodule "lib"]\n\tupdate = !./run\n', "`submodule.lib.update`"),
    ("[protocol]\n\tallow = always\n", "`protocol.allow`"),
    ('[remote "origin"]\n\tvcs = ext\n', "`remote.origin.vcs`"),
    ('[man "x"]\n\tcmd = ./run\n', "`man.x.cmd`"),
    ("[help]\n\tformat = web\n", "`help.format`"),  # `git log --help` starts a browser
]
HARMLESS = [
    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
    "[core]\n\tfsmonitor = true\n",
    "[core]\n\thooksPath = .husky\n",  # hooks run on commits, as in any repository
    '[remote "origin"]\n\turl = https://example.com/r.git\n\tfetch = +refs/*:refs/*\n',
    "# a comment\n; another\n[user]\n\tname = Someone\n",
    '[submodule "lib"]\n\tupdate = rebase\n\turl = ../lib\n',
    "[pager]\n\tlog = false\n",
    "[help]\n\tformat = man\n\tautoCorrect = 0\n",
]


def _repo(root: Path, config: str) -> Path:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "config").write_text(config)
    return root


@pytest.mark.parametrize(("config", "named"), PLANTED, ids=[n for _, n in PLANTED])
def test_a_setting_that_runs_a_program_makes_git_ask(tmp_path: Path, config: str,
                                                     named: str) -> None:
    root = _repo(tmp_path / "proj", config)
    assert named in (planted(root) or "")
    workspace = Workspace.of(ToolContext(root=root), {"PATH": "/usr/bin:/bin"})
    for command in ("git status", "ls && git diff", "git log -p > log.txt"):
        reason = CommandPolicy("git,ls", workspace=workspace).approve(command)
        record("allowlist bypass", f"--commands git, .git/config {named}: {command}",
               "in-process", escaped=reason is None)
        assert reason is not None and "with no sandbox around git" in reason
        assert "ask the user to run it, or to run Swival with the command sandbox" in reason
    assert CommandPolicy("git,ls", workspace=workspace).approve("ls") is None
    confined = dataclasses.replace(workspace, confined=True)  # the sandbox contains it
    assert CommandPolicy("git", workspace=confined).approve("git status") is None


@pytest.mark.parametrize("config", HARMLESS)
def test_ordinary_settings_leave_git_alone(tmp_path: Path, config: str) -> None:
    root = _repo(tmp_path / "proj", config)
    assert planted(root) is None
    workspace = Workspace.of(ToolContext(root=root), {"PATH": "/usr/bin:/bin"})
    assert CommandPolicy("git", workspace=workspace).approve("git status") is None


def test_a_worktree_file_is_followed_to_its_git_and_common_directories(tmp_path: Path) -> None:
    common = _repo(tmp_path / "main", "[core]\n\tbare = false\n") / ".git"
    gitdir = common / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    assert planted(wt) is None
    (common / "config").write_text("[core]\n\tfsmonitor = ./x\n")
    assert "`core.fsmonitor`" in (planted(wt) or "")
    (common / "config").write_text("")
    (gitdir / "config.worktree").write_text('[diff "x"]\n\tcommand = ./x\n')
    assert "`diff.x.command`" in (planted(wt) or "")


@needs_git
def test_one_shot_git_status_does_not_run_a_planted_fsmonitor(fake_server: Any,
                                                              tmp_path: Path) -> None:
    """A repository that arrived with its `.git/` sets `core.fsmonitor`, which real git
    runs on `git status`; with no sandbox, `--commands git` refuses git there."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    with (root / ".git" / "config").open("a") as f:
        f.write('[core]\n\tfsmonitor = "touch pwned-fsmonitor; false"\n')
    server: FakeServer = fake_server(kind="llamacpp").script(
        tools([("run_command", {"command": "git status"}),
               ("run_command", {"command": "git diff"})]),
        text("done"))
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    result = run_swival(server, root, "--commands", "git", "--sandbox", "off", "-p", "look",
                        env=env)
    answers = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    pwned = (root / "pwned-fsmonitor").exists()
    for command, answer in zip(("git status", "git diff"), answers, strict=False):
        record("allowlist bypass", f"--commands git, planted core.fsmonitor: {command}",
               "swival", escaped=pwned or not answer.startswith("command refused: "),
               traceback="Traceback" in result.stderr)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert not pwned
    assert len(answers) == 2 and all("`core.fsmonitor`" in a for a in answers), answers


def _hook(folder: Path, name: str, executable: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("#!/bin/sh\ntouch pwned\n")
    (folder / name).chmod(0o755 if executable else 0o644)


def test_hooks_make_the_git_commands_that_run_them_ask(tmp_path: Path) -> None:
    root = _repo(tmp_path / "proj", "[core]\n\tbare = false\n")
    hooks = root / ".git" / "hooks"
    _hook(hooks, "pre-commit.sample")
    _hook(hooks, "post-checkout", executable=False)
    workspace = Workspace.of(ToolContext(root=root), {"PATH": "/usr/bin:/bin"})
    policy = CommandPolicy("git", workspace=workspace)
    assert policy.approve("git commit -m x") is None  # samples and plain files never run
    _hook(hooks, "pre-commit")
    assert policy.approve("git status") is None and policy.approve("git log -1") is None
    for command in ("git commit -m x", "git status && git commit -m x", "git branch x",
                    "git fetch"):
        reason = policy.approve(command)
        record("allowlist bypass", f"--commands git, a pre-commit hook: {command}",
               "in-process", escaped=reason is None)
        assert reason is not None and "the hook `" in reason and "pre-commit`" in reason
    _hook(hooks, "post-index-change")  # git status runs it when it refreshes the index
    reason = policy.approve("git status")
    assert reason is not None and "post-index-change`, which git runs" in reason
    confined = dataclasses.replace(workspace, confined=True)
    assert CommandPolicy("git", workspace=confined).approve("git commit -m x") is None


def test_a_hooks_path_of_the_repository_is_looked_at(tmp_path: Path) -> None:
    root = _repo(tmp_path / "proj", "[core]\n\thooksPath = .husky\n")
    workspace = Workspace.of(ToolContext(root=root), {"PATH": "/usr/bin:/bin"})
    assert CommandPolicy("git", workspace=workspace).approve("git commit -m x") is None
    _hook(root / ".husky", "pre-commit")
    reason = CommandPolicy("git", workspace=workspace).approve("git commit -m x")
    assert reason is not None and ".husky/pre-commit`, which git runs" in reason


def test_submodules_settings_and_hooks_count_too(tmp_path: Path) -> None:
    """`git status` runs git in each submodule, with the submodule's own configuration."""
    root = _repo(tmp_path / "proj", "[core]\n\tbare = false\n")
    module = root / ".git" / "modules" / "lib"
    module.mkdir(parents=True)
    (module / "config").write_text("[core]\n\tworktree = ../../../lib\n")
    workspace = Workspace.of(ToolContext(root=root), {"PATH": "/usr/bin:/bin"})
    assert CommandPolicy("git", workspace=workspace).approve("git status") is None
    _hook(module / "hooks", "post-index-change")
    reason = CommandPolicy("git", workspace=workspace).approve("git status")
    assert reason is not None and "modules/lib/hooks/post-index-change`" in reason
    (module / "hooks" / "post-index-change").unlink()
    (module / "config").write_text("[core]\n\tfsmonitor = ./x\n")
    reason = CommandPolicy("git", workspace=workspace).approve("git status")
    assert reason is not None and "modules/lib/config` setting `core.fsmonitor`" in reason


@needs_git
def test_one_shot_git_status_does_not_run_a_planted_hook(fake_server: Any,
                                                         tmp_path: Path) -> None:
    """Real git runs `post-index-change` on `git status` after a file changed."""
    root = tmp_path / "repo"
    root.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1"}
    (root / "a.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "a.txt"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    _hook(root / ".git" / "hooks", "post-index-change")
    os.utime(root / "a.txt", (1, 1))  # git status will refresh the index, and write it
    server: FakeServer = fake_server(kind="llamacpp").script(
        tools([("run_command", {"command": "git status"})]), text("done"))
    result = run_swival(server, root, "--commands", "git", "--sandbox", "off", "-p", "look",
                        env=env)
    answers = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    pwned = (root / "pwned").exists()
    record("allowlist bypass", "--commands git, planted post-index-change: git status",
           "swival", escaped=pwned or not answers[0].startswith("command refused: "),
           traceback="Traceback" in result.stderr)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert not pwned and "post-index-change`, which git runs" in answers[0]
