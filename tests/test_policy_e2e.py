"""The command policy the way a user meets it: the installed `swival` one-shot with
`--commands git` against the loopback server, and the approval question in a real
pseudo-terminal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import run_swival
from tests.evidence import record
from tests.fakeserver import FakeServer, text, tool, tools

SWIVAL = shutil.which("swival")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository `repo/` with one commit, and an `outside/` directory beside it."""
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    (root / "a.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "a.txt"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    # A planted `./git` that a PATH trick would run instead of the real one.
    (root / "git").write_text("#!/bin/sh\ntouch pwned-path\n")
    (root / "git").chmod(0o755)
    return root


def bypasses(outside: Path) -> list[str]:
    return [
        "git status;(touch pwned1)",
        "git status&&(touch pwned2)",
        "git status|(sh -c 'touch pwned3')",
        "git status;>pwned4",
        "git status||>pwned5",
        "true;(touch pwned6)",
        "PATH=.:$PATH git status",
        "git -c alias.x='!touch pwned7' x",
        "git -c core.fsmonitor='touch pwned8' status",
        "GIT_EXTERNAL_DIFF='touch pwned9' git diff HEAD",
        f"true > {outside}/pwned10",
        "git status > .git/hooks/post-checkout",
        "git status\ntouch pwned11",
        "eval 'touch pwned12'",
        "git ls-files | xargs touch",
        "cd .. && git status > pwned13",
        "git status & touch pwned14",
        "git log $(touch pwned15)",
        "bash -c 'touch pwned16'",
        "env touch pwned17",
        "{ touch pwned18; }",
    ]


def files(top: Path) -> set[Path]:
    """Everything under `top` but Swival's own state (the session transcript)."""
    return {p for p in top.rglob("*") if ".swival" not in p.parts}


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


@needs_git
def test_one_shot_allowlist_runs_git_status_and_no_bypass(fake_server: Any, repo: Path) -> None:
    outside = repo.parent / "outside"
    attempts = bypasses(outside)
    server: FakeServer = fake_server(kind="llamacpp", window=32_768).script(
        tools([("run_command", {"command": c}) for c in attempts]),
        tool("run_command", command="git status"),
        text("done"),
    )
    before = files(repo.parent)
    result = run_swival(server, repo, "--commands", "git", "--max-turns", "5", "-p", "try")
    refused = tool_results(server.requests[1])
    changed = files(repo.parent) != before
    for command, answer in zip(attempts, refused, strict=False):
        record("allowlist bypass", f"--commands git: {command}", "swival",
               escaped=changed or not answer.startswith("command refused: "),
               traceback="Traceback" in result.stderr)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert len(refused) == len(attempts)
    assert all(r.startswith("command refused: ") for r in refused), refused
    assert "a subshell `( … )`" in refused[0] and "run each program as its own" in refused[0]
    assert "a variable assignment `PATH=…`" in refused[6]
    assert "`git -c`" in refused[7]
    assert "outside the workspace" in refused[10] and "inside .git/" in refused[11]
    assert files(repo.parent) == before
    status = tool_results(server.requests[2])[-1]
    assert "On branch" in status and "[exit code 0]" in status


def spawn(server: FakeServer, root: Path, *args: str, columns: int = 120) -> Any:
    pexpect = pytest.importorskip("pexpect")
    env = {**os.environ, "HOME": str(root), "NO_COLOR": "1", "TERM": "xterm-256color",
           "COLUMNS": str(columns), "LINES": "40"}
    child = pexpect.spawn(SWIVAL, ["--provider", "llamacpp", "--base-url", server.url,
                                   "--commands", "ask", *args],
                          cwd=str(root), env=env, encoding="utf-8",
                          dimensions=(40, columns), timeout=30)
    child.logfile_read = sys.stdout if os.environ.get("SWIVAL_PTY_LOG") else None
    return child


@needs_git
@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
@pytest.mark.timeout(90)
def test_repl_asks_again_for_a_construct_after_always(fake_server: Any, repo: Path) -> None:
    server: FakeServer = fake_server(kind="llamacpp", window=16_384).script(
        tool("run_command", command="git status;(touch once)"),
        tool("run_command", command="git status;(touch twice)"),
        tool("run_command", command="git log --oneline"),
        text("all done"),
    )
    child = spawn(server, repo)
    child.expect_exact("›")
    child.send("go\r")
    child.expect_exact("Run `git status;(touch once)`?")
    child.expect_exact("Needs approval every time: a subshell `( … )`.")
    child.expect_exact("[y]es once / [a]lways allow git / [n]o:")
    child.send("a\r")
    child.expect_exact("Run `git status;(touch twice)`?")  # asked again: git only was added
    child.expect_exact("Needs approval every time: a subshell `( … )`.")
    child.expect_exact("[y]es once / [n]o:")
    child.send("n\r")
    child.expect_exact("all done")  # `git log` ran without a question
    child.expect_exact("›")
    child.sendcontrol("d")
    child.expect(pytest.importorskip("pexpect").EOF)
    record("allowlist bypass", "after always git: git status;(touch twice)", "swival",
           escaped=(repo / "twice").exists())
    assert (repo / "once").exists() and not (repo / "twice").exists()
    results = tool_results(server.requests[-1])
    assert "declined" in results[1] and "first" in results[2]


@needs_git
@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
@pytest.mark.timeout(90)
def test_one_shot_question_wraps_between_words(fake_server: Any, repo: Path) -> None:
    command = ("git log --oneline --decorate --simplify-by-decoration --date-order "
               "--max-count=3; (touch pwned)")
    server: FakeServer = fake_server(kind="llamacpp", window=16_384).script(
        tool("run_command", command=command), text("finished"))
    child = spawn(server, repo, "-p", "go", columns=40)
    child.expect_exact("[n]o:")
    shown = child.before.replace("\r\n", "\n")
    child.send("n\r")
    child.expect(pytest.importorskip("pexpect").EOF)
    lines = shown[shown.index("Run `"):].splitlines()
    assert all(len(line) <= 40 for line in lines), lines
    words = " ".join(lines).replace("`", " ").replace("?", " ").split()
    for word in [*command.split(), "subshell"]:
        assert word in words, (word, lines)
    assert not (repo / "pwned").exists()
    assert "declined" in json.dumps(server.requests[-1]["messages"])


WRITERS = "git,env,make,sort,cp,mv,ln,touch,chmod,mkdir,install,tee,rm,tar"


def git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def planted_writes(outside: Path) -> list[str]:
    """Abbreviated options, whole clusters, programs writing their operands into .git/
    or outside, and writes through a link made earlier in the same command."""
    return [
        "git rebase --exe='touch pwned-rebase' --root",
        "git ls-remote --upload-p='touch pwned-lsremote; false' .",
        "git fetch --upload-pa='touch pwned-fetch; false' .",
        "env -iS'touch pwned-env'",
        "env --split-s='touch pwned-env2'",
        "make --ev='$(shell touch pwned-make)'",
        f"sort --outp={outside}/pwned-sort a.txt",
        "git checkout-index -f --prefix=.git/hooks/ pre-commit",
        f"git worktree add {outside}/wt",
        f"git init --separate-git-dir={outside}/g sub",
        f"git clone -q . {outside}/clone",
        f"git bundle create {outside}/b HEAD",
        "cp pre-commit .git/hooks/pre-commit",
        "touch .SWIVAL/pwned",
        f"mkdir {outside}/d",
        f"install a.txt {outside}/i",
        f"tee {outside}/t",
        f"git bundle create --version 3 {outside}/b3 HEAD",
        f"git push -q file://{outside}/pushed HEAD",
        "chmod -R 000 ../repo",
        "rm -rf ../repo",
        "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='touch pwned-tar' a.txt",
        "tar -I 'touch pwned-tar2' -cf b.tar a.txt",
        "ln -s .git/hooks/post-checkout h && git status > h",
        "git checkout -q evil && git status > h",
    ]


@needs_git
def test_one_shot_writers_allowlist_plants_nothing(fake_server: Any, repo: Path) -> None:
    """Under `--commands` with git and the usual file programs, and no sandbox (so the
    policy alone stands between the model and the files), none of the attempts runs,
    while plain copies and `git status` still do."""
    outside = repo.parent / "outside"
    (repo / "pre-commit").write_text("#!/bin/sh\ntouch pwned-hook\n")
    (repo / "pre-commit").chmod(0o755)
    git(repo, "add", "pre-commit")
    git(repo, "commit", "-q", "-m", "hook")
    git(repo, "checkout", "-q", "-b", "evil")  # a branch whose `h` leads into .git/hooks
    (repo / "h").symlink_to(".git/hooks/post-checkout")
    git(repo, "add", "h")
    git(repo, "commit", "-q", "-m", "link")
    git(repo, "checkout", "-q", "-")
    attempts = planted_writes(outside)
    server: FakeServer = fake_server(kind="llamacpp", window=32_768).script(
        tools([("run_command", {"command": c}) for c in attempts]),
        tools([("run_command", {"command": "cp a.txt b.txt"}),
               ("run_command", {"command": "git status --short"})]),
        text("done"),
    )
    hooks = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    result = run_swival(server, repo, "--commands", WRITERS, "--sandbox", "off",
                        "--max-turns", "5", "-p", "try")
    refused = tool_results(server.requests[1])
    planted = sorted(p.name for p in (repo / ".git" / "hooks").iterdir()) != hooks
    pwned = [p.name for p in repo.rglob("pwned*")] + [p.name for p in outside.iterdir()]
    for command, answer in zip(attempts, refused, strict=False):
        record("allowlist bypass", f"--commands {WRITERS}: {command}", "swival",
               escaped=bool(planted or pwned) or not answer.startswith("command refused: "),
               traceback="Traceback" in result.stderr)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert len(refused) == len(attempts)
    assert all(r.startswith("command refused: ") for r in refused), refused
    assert "(short for --exec)" in refused[0] and "`env`" in refused[3]
    assert "after `git checkout`" in refused[-1]
    assert not planted and not pwned and not (repo / "h").exists()
    assert (repo / ".SWIVAL").exists() is False
    plain = tool_results(server.requests[2])[-2:]
    assert "[exit code 0]" in plain[0] and (repo / "b.txt").read_text() == "a\n"
    assert "b.txt" in plain[1] and "[exit code 0]" in plain[1]


ARCHIVERS = "git,tar,zip,unzip,rsync"


@needs_git
def test_one_shot_archivers_and_checkout_keep_outside_and_state(fake_server: Any,
                                                                repo: Path) -> None:
    """With no sandbox, the repository ships a link `out` to a directory outside, a zip
    holding `out/...` and `.git/hooks/...`, a tar holding a hook, and a branch whose
    `.swival` is a link outside:
    unzip, tar, zip and rsync write nothing outside or into .git/, `git checkout` of that
    branch is not run, so Swival's own state stays where it is; plain use still runs."""
    import zipfile

    outside = repo.parent / "outside"
    (outside / "stolen").mkdir()
    git(repo, "checkout", "-q", "-b", "evil")
    (repo / ".swival").symlink_to(outside / "stolen")
    git(repo, "add", ".swival")
    git(repo, "commit", "-q", "-m", "state elsewhere")
    git(repo, "checkout", "-q", "-")
    (repo / "out").symlink_to(outside)
    for name, members in (("evil.zip", ["out/pwned-zip"]), ("hook.zip", [".git/hooks/pre-commit"]),
                          ("ok.zip", ["unpacked.txt"])):
        with zipfile.ZipFile(repo / name, "w") as archive:
            for member in members:
                archive.writestr(member, "#!/bin/sh\ntouch pwned-member\n")
    git(repo, "add", "a.txt")
    subprocess.run(["tar", "-cf", "a.tar", "a.txt"], cwd=repo, check=True)
    (repo / "planted" / ".git" / "hooks").mkdir(parents=True)
    (repo / "planted" / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\ntouch x\n")
    subprocess.run(["tar", "-cf", "../hook.tar", ".git"], cwd=repo / "planted", check=True)
    attempts = ["git checkout -q evil", "git switch -q evil", "git reset -q --hard evil",
                "unzip -o evil.zip", "unzip -o hook.zip", f"unzip -o ok.zip -d {outside}",
                "tar -xf hook.tar", "tar xf hook.tar .git/hooks/pre-commit",
                f"tar -xf a.tar -C {outside}", f"tar -cf {outside}/pwned.tar a.txt",
                f"zip -q {outside}/pwned.zip a.txt", f"rsync -a a.txt {outside}/",
                "git help -w status"]
    server: FakeServer = fake_server(kind="llamacpp", window=32_768).script(
        tools([("run_command", {"command": c}) for c in attempts]),
        tools([("run_command", {"command": "unzip -o ok.zip"}),
               ("run_command", {"command": "tar -xf a.tar -C unpacked"}),
               ("run_command", {"command": "git status --short"})]),
        text("done"),
    )
    (repo / "unpacked").mkdir()
    before = sorted(p.name for p in outside.rglob("*"))
    hooks = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    result = run_swival(server, repo, "--commands", ARCHIVERS, "--sandbox", "off",
                        "--max-turns", "5", "-p", "try")
    refused = tool_results(server.requests[1])
    state = repo / ".swival"
    escaped = (sorted(p.name for p in outside.rglob("*")) != before or state.is_symlink()
               or sorted(p.name for p in (repo / ".git" / "hooks").iterdir()) != hooks)
    for command, answer in zip(attempts, refused, strict=False):
        record("allowlist bypass", f"--commands {ARCHIVERS} --sandbox off: {command}",
               "swival", escaped=escaped or not answer.startswith("command refused: "),
               traceback="Traceback" in result.stderr)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert len(refused) == len(attempts)
    assert all(r.startswith("command refused: ") for r in refused), refused
    assert "could replace Swival's own .swival/" in refused[0]
    assert "`git help --web`" in refused[-1]
    assert not escaped and state.is_dir() and any((state / "sessions").iterdir())
    plain = tool_results(server.requests[2])[-3:]
    assert all("[exit code 0]" in p for p in plain), plain
    assert (repo / "unpacked.txt").exists() and (repo / "unpacked" / "a.txt").exists()
