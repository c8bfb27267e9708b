"""The command sandbox through the installed `swival`, one-shot against the loopback
FakeServer, the way a user runs it with `--commands all`: what commands can write and
reach, what they see of the environment, and what the person is told."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import Listener, bwrap_problem, run_swival
from tests.evidence import record
from tests.fakeserver import text, tool

PROBLEM = bwrap_problem()
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"no working bubblewrap: {PROBLEM}")
KEY = "sk-e2e-configured-7a6b5c4d3e"


def tool_results(server: Any) -> list[str]:
    """What the model was shown for each tool call, in order."""
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "sibling").mkdir()
    return root


@needs_bwrap
def test_commands_all_cannot_write_outside_or_reach_the_network(
        fake_server: Any, project: Path, listener: Listener) -> None:
    lib, sibling = project.parent / "lib", project.parent / "sibling"
    home_file = Path.home() / f".swival-e2e-{uuid.uuid4().hex}"
    writes = " ; ".join(
        f'(echo pwned >> "{t}") && echo "wrote {t}" || echo "refused {t}"'
        for t in ["inside.txt", lib / "lib.txt", home_file, sibling / "x", "/tmp/planted",
                  ".git/hooks/pre-commit", ".git/config", ".swival/sessions/planted.jsonl"])
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command=writes),
        tool("run_command", command=listener.connect_command()),
        text("done"))
    try:
        result = run_swival(server, project, "--commands", "all", "--add-dir", str(lib),
                            "-p", "try to escape")
        crashed = "Traceback" in result.stderr
        landed = {"a file in $HOME": home_file.exists(), "a sibling directory":
                  (sibling / "x").exists(), "/tmp": Path("/tmp/planted").exists(),
                  ".git/hooks": any((project / ".git" / "hooks").iterdir()),
                  ".git/config": (project / ".git" / "config").read_text() != "[core]\n",
                  ".swival/sessions": (project / ".swival" / "sessions" /
                                       "planted.jsonl").exists(),
                  "a network connection": listener.accepted > 0}
        for target, escaped in landed.items():
            record("sandbox escape", f"--commands all: {target}", "swival", escaped=escaped,
                   traceback=crashed)
        assert result.returncode == 0, result.stderr
        assert "commands sandboxed (bubblewrap, no network)" in result.stderr
        wrote, connect = tool_results(server)
        assert "wrote inside.txt" in wrote and f"wrote {lib / 'lib.txt'}" in wrote
        assert (project / "inside.txt").exists() and (lib / "lib.txt").exists()
        assert f"refused {home_file}" in wrote and not home_file.exists()
        assert not (sibling / "x").exists() and not Path("/tmp/planted").exists()
        assert "refused .git/hooks/pre-commit" in wrote and "refused .git/config" in wrote
        assert not list((project / ".git" / "hooks").iterdir())
        assert (project / ".git" / "config").read_text() == "[core]\n"
        assert not (project / ".swival" / "sessions" / "planted.jsonl").exists()
        assert "--sandbox off" in wrote, "the model learns how the user can allow writes"
        assert "connected" not in connect and listener.accepted == 0
        assert "--allow-net" in connect
    finally:
        home_file.unlink(missing_ok=True)


@needs_bwrap
def test_allow_net_restores_the_connection(fake_server: Any, project: Path,
                                           listener: Listener) -> None:
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command=listener.connect_command()), text("done"))
    result = run_swival(server, project, "--commands", "all", "--allow-net", "-p", "connect")
    assert result.returncode == 0, result.stderr
    assert "commands sandboxed (bubblewrap, network allowed)" in result.stderr
    assert "connected" in tool_results(server)[0] and listener.accepted_within() == 1


def test_sandbox_on_without_bwrap_refuses_commands_and_says_how_to_fix(
        fake_server: Any, project: Path) -> None:
    empty_path = project.parent / "empty-bin"
    empty_path.mkdir()
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="touch ran.txt"), text("could not run it"))
    result = run_swival(server, project, "--commands", "all", "--sandbox", "on", "-p", "run",
                        env={"PATH": str(empty_path)})
    assert (result.returncode, result.stdout) == (0, "could not run it\n"), result.stderr
    assert "Sandbox on, but bubblewrap (bwrap) is not installed" in result.stderr
    assert "apt install bubblewrap" in result.stderr and "--sandbox off" in result.stderr
    assert "Traceback" not in result.stderr
    refusal = tool_results(server)[0]
    assert refusal.startswith("command refused:") and "--sandbox off" in refusal
    assert not (project / "ran.txt").exists()


def test_auto_without_bwrap_says_once_that_commands_are_not_sandboxed(
        fake_server: Any, project: Path) -> None:
    empty_path = project.parent / "empty-bin"
    empty_path.mkdir()
    server = fake_server(kind="llamacpp").script(text("ok"))
    result = run_swival(server, project, "--commands", "all", "-p", "hi",
                        env={"PATH": str(empty_path)})
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("Commands run without a sandbox: bubblewrap (bwrap) is not "
                               "installed") == 1
    assert "commands not sandboxed (bubblewrap unavailable)" in result.stderr


def test_printenv_shows_no_secret_and_pass_env_lets_one_through(
        fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="env"),
        tool("run_command", command="printenv OPENROUTER_API_KEY; echo rc=$?"),
        text("done"))
    env = {"OPENROUTER_API_KEY": "sk-or-0123456789abcdef", "GITHUB_TOKEN": "ghp-0123456789ab",
           "DEPLOY_PASSWORD": "hunter2", "ALIAS_OF_KEY": KEY,
           "PLAIN_SETTING": "visible-value"}
    result = run_swival(server, project, "--commands", "all", "--api-key", KEY,
                        "--pass-env", "GITHUB_TOKEN", "--json", "-p", "show env", env=env)
    assert result.returncode == 0, result.stderr
    shown, printenv = tool_results(server)
    everything = json.dumps(server.requests) + result.stdout + result.stderr
    for name, value in env.items():
        if value != "visible-value":
            record("secret leak", f"env and printenv in a command: {name}", "swival",
                   secrets=int(value in everything), traceback="Traceback" in result.stderr)
    assert "PLAIN_SETTING=visible-value" in shown
    # DEPLOY_PASSWORD's value is too short to count as a key: only its name hides it.
    for name in ("OPENROUTER_API_KEY", "DEPLOY_PASSWORD", "ALIAS_OF_KEY"):
        assert f"{name}=" not in shown, name
    # Let through on request; the value is still redacted before the model sees it.
    assert "GITHUB_TOKEN=[redacted:GITHUB_TOKEN]" in shown
    assert printenv.startswith("rc=1"), "the variable does not exist for the command"
    assert all(v not in everything for v in env.values() if v != "visible-value")


def test_doctor_says_whether_commands_are_sandboxed(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp")
    result = run_swival(server, project, "--doctor")
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("sandbox "))
    expected = ("commands sandboxed (bubblewrap, no network)" if PROBLEM is None
                else "commands not sandboxed (bubblewrap unavailable)")
    assert line.split(None, 1)[1] == expected
    off = run_swival(server, project, "--doctor", "--sandbox", "off")
    assert "sandbox          commands not sandboxed (sandbox off)" in off.stdout


def test_a_pass_env_entry_that_is_no_name_is_a_config_error(fake_server: Any,
                                                            project: Path) -> None:
    server = fake_server(kind="llamacpp").script(text("never"))
    result = run_swival(server, project, "--pass-env", "NOT A NAME", "-p", "hi")
    assert result.returncode == 2
    assert "pass_env: 'NOT A NAME' is not an environment variable name" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_outside_the_sandbox_swivals_own_proc_files_hold_no_secret(
        fake_server: Any, project: Path) -> None:
    """Without the sandbox's PID namespace a command can read its parent's start-up
    environment and arguments; reversed, the key would pass redaction."""
    readers = ["cat /proc/$PPID/environ | tr '\\0' '\\n' | rev",
               "cat /proc/$PPID/cmdline | tr '\\0' '\\n' | rev"]
    server = fake_server(kind="llamacpp").script(
        *(tool("run_command", command=c) for c in readers), text("done"))
    env = {"OPENROUTER_API_KEY": "sk-or-0123456789abcdef"}
    result = run_swival(server, project, "--commands", "all", "--sandbox", "off",
                        "--api-key", KEY, "-p", "look", env=env)
    assert result.returncode == 0, result.stderr
    environ, cmdline = tool_results(server)
    assert "=YEK_IPA_RETUORNEPO" in environ and "yek-ipa--" in cmdline  # read, reversed
    for value in (env["OPENROUTER_API_KEY"], KEY):
        record("secret leak", "/proc/$PPID environ and cmdline, reversed, sandbox off",
               "swival", secrets=int(value[::-1] in environ + cmdline))
        assert value[::-1] not in environ + cmdline
    assert server.auth[0] == f"Bearer {KEY}"  # Swival itself still has the key


@pytest.fixture
def user_dirs() -> Iterator[Path]:
    """The user's config and state directories, outside /tmp (which the sandbox replaces
    anyway), as XDG_CONFIG_HOME and XDG_STATE_HOME point to them."""
    home = Path.home() / f".swival-e2e-{uuid.uuid4().hex[:12]}"
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@needs_bwrap
def test_swivals_own_config_state_and_the_ssh_agent_are_hidden_from_commands(
        fake_server: Any, project: Path, user_dirs: Path) -> None:
    config, state = user_dirs / "config" / "swival", user_dirs / "state" / "swival"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('# deploy with passphrase "correct-horse-42"\n')
    (state / "sessions").mkdir(parents=True)
    agent_path = str(user_dirs / "agent.sock")
    agent = socket.socket(socket.AF_UNIX)
    agent.bind(agent_path)
    agent.listen(4)
    agent.settimeout(0.5)
    connect = (f'"{sys.executable}" -c "import socket; s = socket.socket(socket.AF_UNIX); '
               f"s.connect('{agent_path}')\" && echo agent-connected")
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command=f"cat {config}/config.toml; ls -A {state}; "
                                    f"touch {state}/planted; {connect}"),
        text("done"))
    env = {"XDG_CONFIG_HOME": str(user_dirs / "config"),
           "XDG_STATE_HOME": str(user_dirs / "state"), "SSH_AUTH_SOCK": agent_path}
    try:
        result = run_swival(server, project, "--commands", "all", "-p", "look", env=env)
        try:
            agent.accept()[0].close()
            reached = True
        except TimeoutError:
            reached = False
    finally:
        agent.close()
    (shown,) = tool_results(server)
    crashed = "Traceback" in result.stderr
    for case, escaped in [("read Swival's config file", "correct-horse-42" in shown),
                          ("list Swival's state directory", "sessions" in shown),
                          ("write Swival's state directory", (state / "planted").exists()),
                          ("connect to the SSH agent", reached or "agent-connected" in shown)]:
        record("sandbox escape", f"--commands all: {case}", "swival", escaped=escaped,
               traceback=crashed)
    assert result.returncode == 0, result.stderr
    assert "correct-horse-42" not in shown and "sessions" not in shown
    assert not (state / "planted").exists()
    assert not reached and "agent-connected" not in shown and "Connection refused" in shown
    assert (state / "sessions").is_dir(), "Swival itself still uses its state directory"


SNEAKY = {
    "rename .git away": "mv .git g2",
    "rename .swival away": "mv .swival s2",
    "hard link into .git, then write": "ln .git/config hl && echo x >> hl",
    "symlink to .git/hooks, then write": "ln -s .git/hooks h && echo x > h/pre-commit",
    "new user namespace, unmount .git, then write": (
        "python3 -c \"import ctypes, os; l = ctypes.CDLL(None, use_errno=True); "
        "l.unshare(0x10000000 | 0x20000); g = os.getcwd().encode() + b'/.git'; "
        "l.umount2(g, 2); l.mount(None, g, None, 32 | 4096, None); "
        "open('.git/config', 'a').write('x')\""),
    "see Swival's process": ('pat=bin/swiv; pat="${pat}al"; for p in /proc/[0-9]*; do '
                             'grep -qa "$pat" "$p/cmdline" 2>/dev/null && exit 0; done; exit 1'),
}


@needs_bwrap
def test_sandbox_escapes_through_renames_links_namespaces_and_proc_fail(
        fake_server: Any, project: Path) -> None:
    abstract = socket.socket(socket.AF_UNIX)
    name = f"swival-e2e-{uuid.uuid4().hex[:12]}"
    abstract.bind("\0" + name)
    abstract.listen(4)
    abstract.settimeout(0.5)
    attempts = {**SNEAKY, "connect to an abstract socket": (
        f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('\\0{name}')\"")}
    script = " ; ".join(f"( {cmd} ) >/dev/null 2>&1 && echo 'ESCAPED: {case}'"
                        for case, cmd in attempts.items())
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command=script), tool("run_command", command="kill -9 -1"),
        text("still here"))
    try:
        # --sandbox on: should bwrap fail after all, nothing runs (`kill -9 -1` unconfined
        # would end every process of the user).
        result = run_swival(server, project, "--commands", "all", "--sandbox", "on",
                            "-p", "escape")
        try:
            abstract.accept()[0].close()
            reached = True
        except TimeoutError:
            reached = False
    finally:
        abstract.close()
    shown = tool_results(server)[0] if len(server.requests) > 1 else ""
    crashed = "Traceback" in result.stderr
    for case in attempts:
        escaped = f"ESCAPED: {case}" in shown or (case.startswith("connect") and reached)
        record("sandbox escape", f"--commands all: {case}", "swival", escaped=escaped,
               traceback=crashed)
    record("sandbox escape", "--commands all: kill -9 -1 (every process it may)", "swival",
           escaped=result.stdout != "still here\n", traceback=crashed)
    assert (result.returncode, result.stdout) == (0, "still here\n"), result.stderr
    assert "ESCAPED" not in shown and not reached, shown
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert not list((project / ".git" / "hooks").iterdir())
    assert (project / ".git").is_dir() and (project / ".swival").is_dir()
