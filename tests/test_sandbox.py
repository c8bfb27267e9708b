"""The command sandbox, in-process through the run_command tool with the real bubblewrap:
what a command can write, whether it reaches the network, which environment it sees, and
what happens when bwrap is missing or broken."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.registry import ToolRegistry
from swival.tools.sandbox import Mounts, Sandbox, SandboxConfig
from tests.e2e import Listener, bwrap_problem, gone, unique_sleep
from tests.evidence import record

PROBLEM = bwrap_problem()
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"no working bubblewrap: {PROBLEM}")
KEY = "sk-configured-key-5d1c0ffee"


def run(ctx: ToolContext, command: str) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", "run_command", {"command": command}),
                                          ctx)


def sandbox(**config: Any) -> Sandbox:
    return Sandbox(SandboxConfig(**{"mode": "on", **config}))


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A workspace (a git repository), an add-dir, a read-only add-dir and a sibling."""
    paths = {name: tmp_path / name for name in ("ws", "extra", "ro", "sibling")}
    for path in paths.values():
        path.mkdir()
    ws = paths["ws"]
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".swival").mkdir()
    (paths["ro"] / "data.txt").write_text("reference\n")
    return paths


def context(layout: dict[str, Path], box: Sandbox) -> ToolContext:
    return ToolContext(root=layout["ws"], extra_dirs=(layout["extra"],),
                       read_only_dirs=(layout["ro"],), command_timeout=30, sandbox=box)


def attempt(targets: list[str]) -> str:
    """A command that tries to write each target and prints what happened to each."""
    lines = [f'(echo pwned >> "{t}") 2>/dev/null && echo "wrote {t}" || echo "refused {t}"'
             for t in targets]
    return "\n".join(lines)


@needs_bwrap
def test_writes_stay_in_the_workspace_add_dirs_and_private_tmp(layout: dict[str, Path]) -> None:
    ws = layout["ws"]
    home_file = Path.home() / f".swival-sandbox-test-{uuid.uuid4().hex}"
    tmp_file = Path("/tmp") / f"swival-sandbox-test-{uuid.uuid4().hex}"
    blocked = [str(home_file), str(layout["sibling"] / "x"), str(ws / ".git" / "hooks" / "x"),
               str(ws / ".git" / "config"), str(ws / ".swival" / "x"), str(layout["ro"] / "x")]
    allowed = [str(ws / "inside.txt"), str(layout["extra"] / "extra.txt"), str(tmp_file)]
    try:
        result = run(context(layout, sandbox()),
                     attempt(blocked + allowed) + '\necho tmpdir=$TMPDIR; mktemp -d\n'
                     'mount -o remount,rw / 2>/dev/null && echo remounted')
        for target in blocked:
            changed = (Path(target).read_text() != "[core]\n" if target.endswith("config")
                       else Path(target).exists())
            record("sandbox escape", f"write {Path(target).name} outside the writable dirs",
                   "in-process", escaped=changed)
        record("sandbox escape", "remount / read-write", "in-process",
               escaped="remounted" in result.content)
        for target in allowed:
            assert f"wrote {target}" in result.content
        for target in blocked:
            assert not Path(target).exists() or target.endswith("config"), target
        assert (ws / ".git" / "config").read_text() == "[core]\n"
        assert not list((ws / ".git" / "hooks").iterdir())
        assert (ws / "inside.txt").read_text() == "pwned\n"
        assert (layout["extra"] / "extra.txt").read_text() == "pwned\n"
        assert not tmp_file.exists(), "/tmp inside the sandbox is private"
        assert "tmpdir=/tmp\n/tmp/tmp." in result.content
        assert "remounted" not in result.content, "no capability to undo the read-only root"
        # Outside /tmp the refusals are the sandbox's read-only file system.
        for target in [str(home_file), str(ws / ".git" / "hooks" / "x")]:
            assert f"refused {target}" in result.content
    finally:
        home_file.unlink(missing_ok=True)
        tmp_file.unlink(missing_ok=True)


@needs_bwrap
def test_read_only_failure_gets_a_note_naming_the_way_out(layout: dict[str, Path]) -> None:
    result = run(context(layout, sandbox()), "touch .git/index.lock")
    assert "Read-only file system" in result.content
    note = result.content.splitlines()[-1]
    assert note.startswith("[sandbox:") and "--sandbox off" in note
    assert str(layout["ws"]) in note and str(layout["extra"]) in note and ".git/" in note
    unsandboxed = run(context(layout, Sandbox()), "echo 'Read-only file system'")
    assert "[sandbox:" not in unsandboxed.content


@needs_bwrap
def test_missing_git_and_swival_cannot_be_created(tmp_path: Path) -> None:
    command = ("mkdir -p .git/hooks; echo 'rm -rf ~' > .git/hooks/post-checkout; "
               "mkdir -p .swival/sessions; echo '{}' > .swival/sessions/planted.jsonl; "
               "echo made > ordinary.txt")
    result = run(ToolContext(root=tmp_path, sandbox=sandbox()), command)
    for name in (".git", ".swival"):
        record("sandbox escape", f"create a missing {name}/ with a hook or session",
               "in-process", escaped=(tmp_path / name).exists())
    assert "Read-only file system" in result.content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ordinary.txt"], \
        "no .git or .swival, and the sandbox's stand-ins are gone"


def _git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)


@needs_bwrap
@pytest.mark.parametrize("kind", ["worktree", "separate-git-dir"])
def test_a_git_file_pointer_protects_the_real_git_directory(tmp_path: Path, kind: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    src, wt = tmp_path / "src", tmp_path / "wt"
    if kind == "worktree":
        gitdir, readme = src / "main" / ".git", src / "main" / "notes.txt"
        _git("init", "-q", str(src / "main"))
        _git("-C", str(src / "main"), "commit", "-q", "--allow-empty", "-m", "0")
        _git("-C", str(src / "main"), "worktree", "add", "-q", str(wt))
    else:
        gitdir, readme = src / "store.git", src / "notes.txt"
        src.mkdir()
        _git("init", "-q", "--separate-git-dir", str(gitdir), str(wt))
    assert (wt / ".git").is_file()
    # The git directory sits inside a writable add-dir, below its top: only the `.git`
    # file's pointer leads to it.
    ctx = ToolContext(root=wt, extra_dirs=(src,), sandbox=sandbox())
    hook, gitfile = gitdir / "hooks" / "post-checkout", wt / ".git"
    result = run(ctx, attempt([str(hook), str(gitdir / "config"), str(gitfile), str(readme)])
                 + "\ngit status --short; echo rc=$?")
    for target, escaped in ((hook, hook.exists()),
                            (gitdir / "config", "pwned" in (gitdir / "config").read_text()),
                            (gitfile, "pwned" in gitfile.read_text())):
        record("sandbox escape", f"{kind}: write {target.name} of the real git directory",
               "in-process", escaped=escaped)
    assert f"refused {hook}" in result.content and not hook.exists()
    assert f"refused {gitfile}" in result.content and "pwned" not in gitfile.read_text()
    assert "pwned" not in (gitdir / "config").read_text()
    assert f"wrote {readme}" in result.content, "the add-dir itself is writable"
    assert "rc=0" in result.content, "git can still read the repository"


@needs_bwrap
def test_no_network_unless_allowed(layout: dict[str, Path], listener: Listener) -> None:
    blocked = run(context(layout, sandbox()), listener.connect_command())
    record("sandbox escape", "a network connection", "in-process",
           escaped=listener.accepted > 0)
    assert "Connection refused" in blocked.content and "connected" not in blocked.content
    assert listener.accepted == 0
    assert "--allow-net" in blocked.content.splitlines()[-1]
    allowed = run(context(layout, sandbox(allow_net=True)), listener.connect_command())
    assert "connected" in allowed.content and listener.accepted_within() == 1
    assert "--allow-net" not in allowed.content


@needs_bwrap
def test_host_sockets_under_run_are_hidden(tmp_path: Path) -> None:
    if not os.path.isdir("/run") or not os.listdir("/run"):
        pytest.skip("this machine's /run is empty anyway")
    result = run(ToolContext(root=tmp_path, sandbox=sandbox()), "ls -A /run | wc -l")
    assert result.content.startswith("0\n")


@needs_bwrap
def test_a_daemon_does_not_outlive_a_sandboxed_command(tmp_path: Path) -> None:
    sleeper = unique_sleep()
    result = run(ToolContext(root=tmp_path, sandbox=sandbox()),
                 f"setsid {sleeper} </dev/null >/dev/null 2>&1 & echo started")
    assert result.content.startswith("started")
    assert gone(sleeper), "leaving the process group does not leave the PID namespace"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {"OPENAI_API_KEY": "sk-openai-0123456789", "GITHUB_TOKEN": "ghp-abcdefghijkl",
              "DB_PASSWORD": "hunter2-hunter2", "AWS_SECRET_ACCESS_KEY": "aws-9876543210",
              "ALIAS_OF_KEY": KEY, "PLAIN_SETTING": "visible-value"}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.mark.parametrize("mode", ["off", "on"])
def test_commands_never_see_secrets(tmp_path: Path, secret_env: dict[str, str],
                                    mode: str) -> None:
    if mode == "on" and PROBLEM:
        pytest.skip(f"no working bubblewrap: {PROBLEM}")
    box = sandbox(mode=mode, secrets=(KEY,))
    result = run(ToolContext(root=tmp_path, sandbox=box), "env")
    for name, value in secret_env.items():
        if name != "PLAIN_SETTING":
            record("secret leak", f"env in a command (sandbox {mode}): {name}", "in-process",
                   secrets=int(value in result.content))
    assert "PLAIN_SETTING=visible-value" in result.content
    for name, value in secret_env.items():
        if name != "PLAIN_SETTING":
            assert value not in result.content and f"{name}=" not in result.content, name


def test_pass_env_lets_a_named_secret_through(tmp_path: Path,
                                              secret_env: dict[str, str]) -> None:
    box = sandbox(mode="off", secrets=(KEY,), pass_env=("GITHUB_TOKEN",))
    result = run(ToolContext(root=tmp_path, sandbox=box), "env")
    assert "GITHUB_TOKEN=ghp-abcdefghijkl" in result.content
    assert "OPENAI_API_KEY" not in result.content and KEY not in result.content


@pytest.mark.parametrize("mode", ["off", "on"])
def test_git_never_takes_up_a_bare_repository_a_command_wrote(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """Files that make the workspace a bare repository, with an alias that runs a
    program: `git st` (which `--commands git` allows) must not run it. A git setting
    the person gave through GIT_CONFIG_COUNT still applies."""
    if mode == "on" and PROBLEM:
        pytest.skip(f"no working bubblewrap: {PROBLEM}")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "swival.probe")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "kept")
    for folder in ("objects", "refs/heads"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "config").write_text("[core]\n\tbare = true\n[alias]\n\tst = !touch pwned\n")
    ctx = ToolContext(root=tmp_path, sandbox=sandbox(mode=mode))
    result = run(ctx, "git st")
    record("allowlist bypass", f"git alias of a bare repository a command wrote "
           f"(sandbox {mode})", "in-process", escaped=(tmp_path / "pwned").exists())
    assert not (tmp_path / "pwned").exists()
    assert "not a git command" in result.content
    assert "cannot use bare repository" in run(ctx, "git rev-parse --git-dir").content
    assert run(ctx, "git config --get swival.probe").content.startswith("kept")


def test_sandbox_on_without_bwrap_refuses_every_command(tmp_path: Path) -> None:
    box = sandbox(bwrap=str(tmp_path / "no-such-bwrap"))
    assert box.problem and "cannot be started" in box.problem
    result = run(ToolContext(root=tmp_path, sandbox=box), "touch ran.txt")
    assert result.is_error and result.content.startswith("command refused:")
    assert "--sandbox off" in result.content and "bubblewrap" in result.content
    assert not (tmp_path / "ran.txt").exists()
    notice = box.startup_notice() or ""
    assert "every command will be refused" in notice and "--sandbox off" in notice


def test_auto_without_a_working_bwrap_runs_unsandboxed_and_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\n"
                      "exit 1\n")
    broken.chmod(0o755)
    box = sandbox(mode="auto", bwrap=str(broken))
    assert not box.active
    assert box.describe() == "commands not sandboxed (bubblewrap unavailable)"
    notice = box.startup_notice() or ""
    assert "setting up uid map: Permission denied" in notice and "user namespaces" in notice
    result = run(ToolContext(root=tmp_path, sandbox=box), "echo ran > ran.txt")
    assert not result.is_error and (tmp_path / "ran.txt").exists()


def test_sandbox_off_says_so_and_tries_nothing(tmp_path: Path) -> None:
    box = sandbox(mode="off", bwrap=str(tmp_path / "no-such-bwrap"))
    assert box.problem is None and box.startup_notice() is None
    assert box.describe() == "commands not sandboxed (sandbox off)"


@pytest.mark.parametrize(("line", "name", "value", "held"), [
    ('sandbox = "off"', "sandbox", "off", True),
    ('sandbox = "on"', "sandbox", "on", False),
    ("allow_net = true", "allow_net", True, True),
    ('pass_env = ["GITHUB_TOKEN"]', "pass_env", ("GITHUB_TOKEN",), True),
])
def test_a_project_file_loosens_the_sandbox_only_when_trusted(
        tmp_path: Path, line: str, name: str, value: Any, held: bool) -> None:
    from swival.config import KEYS_BY_NAME, load_settings

    (tmp_path / "swival.toml").write_text(line + "\n")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    untrusted = load_settings({}, cwd=tmp_path, env=env)
    trusted = load_settings({}, cwd=tmp_path, env=env, trusted=lambda _file, _keys: True)
    default = KEYS_BY_NAME[name].default
    ignored = tuple(default) if isinstance(default, list) else default
    assert getattr(trusted, name) == value
    assert getattr(untrusted, name) == (ignored if held else value)
    assert (name in untrusted.trust_keys) is held


@needs_bwrap
def test_a_stub_is_not_removed_while_another_command_runs_behind_it(tmp_path: Path) -> None:
    """Two commands in one workspace without `.git` (two sessions, say): the first makes
    the read-only stand-in, the second runs behind it. Removing the stand-in when the first
    ended detached it from the second's sandbox, which could then create `.git` (a hook, a
    config with core.fsmonitor) on the host."""
    (tmp_path / ".swival").mkdir()
    mounts = Mounts((tmp_path,))
    first, second = sandbox(), sandbox()
    plant = ("for i in $(seq 1 30); do mkdir -p .git/hooks 2>/dev/null && "
             "echo x > .git/hooks/pre-commit 2>/dev/null && echo WROTE && exit 0; "
             "sleep 0.1; done; echo refused")
    seen: dict[str, str] = {}

    def run_second() -> None:
        with second.launch(["bash", "-c", plant], mounts, os.environ) as launch:
            seen["out"] = subprocess.run(launch.argv, env=launch.env, capture_output=True,
                                         text=True, timeout=30).stdout.strip()

    with first.launch(["sleep", "0.8"], mounts, os.environ) as launch:
        sleeper = subprocess.Popen(launch.argv, env=launch.env)
        time.sleep(0.4)  # the stand-in exists; the second command starts behind it
        other = threading.Thread(target=run_second)
        other.start()
        sleeper.wait()
    other.join()
    planted = (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    record("sandbox escape", "create .git after another command's stand-in went away",
           "in-process", escaped=planted)
    assert seen["out"] == "refused" and not planted
    assert not (tmp_path / ".git").exists(), "the last command out removed the stand-in"
