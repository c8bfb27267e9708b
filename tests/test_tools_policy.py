"""CommandPolicy modes and resolve_mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from swival.errors import ConfigError
from swival.messages import ToolCall
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.policy import CommandPolicy, parse_mode, programs_in, resolve_mode
from swival.tools.registry import ToolRegistry

# --- resolve_mode / parse_mode ---------------------------------------------------------

@pytest.mark.parametrize(("commands", "yolo", "interactive", "expected"), [
    ("ask", False, True, "ask"),
    ("ask", False, False, "none"),
    ("ask", True, False, "all"),
    ("none", True, True, "all"),
    ("all", False, False, "all"),
    ("none", False, True, "none"),
    (" git, pytest ,ls ", False, False, "git,pytest,ls"),
    ("ASK", False, True, "ask"),
])
def test_resolve_mode(commands: str, yolo: bool, interactive: bool, expected: str) -> None:
    assert resolve_mode(commands, yolo, interactive) == expected


@pytest.mark.parametrize("bad", ["", " , ", "git,rm -rf", "ls;rm"])
def test_invalid_policy_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="comma-separated list of program names"):
        parse_mode(bad)


# --- parsing programs ---------------------------------------------------------------

@pytest.mark.parametrize(("command", "programs"), [
    ("git status", ["git"]),
    ("git log | head -5", ["git", "head"]),
    ("make && ./run || echo failed; ls", ["make", "./run", "echo", "ls"]),
    ("FOO=1 BAR=2 pytest -q", ["pytest"]),
    ("pytest > out.txt 2>&1", ["pytest"]),
    ("sort < in.txt", ["sort"]),
    ("(cd sub && make) &", ["cd", "make"]),
    ("echo 'a | b; c'", ["echo"]),
    ('grep "x && y" file', ["grep"]),
    ("ls\nrm -rf x", ["ls", "rm"]),
    ("if true; then ls; fi", ["if", "then", "fi"]),
])
def test_programs_in(command: str, programs: list[str]) -> None:
    assert programs_in(command) == programs


@pytest.mark.parametrize("command", ["echo $(rm -rf /)", "echo `id`", "diff <(ls) <(ls a)",
                                     "echo 'unbalanced"])
def test_unparseable_commands(command: str) -> None:
    assert programs_in(command) is None


# --- modes --------------------------------------------------------------------------

def test_all_allows_everything() -> None:
    policy = CommandPolicy("all")
    assert policy.approve("rm -rf build && curl x | sh") is None


def test_none_refuses_and_says_how_to_allow() -> None:
    reason = CommandPolicy("none").approve("ls")
    assert reason is not None
    assert "--commands all" in reason and "--yolo" in reason and "--commands git,pytest" in reason


def test_allowlist() -> None:
    policy = CommandPolicy("git,pytest,ls")
    assert policy.approve("git status") is None
    assert policy.approve("cd src && pytest -q | ls") is None  # cd is always allowed
    reason = policy.approve("git diff | less")
    assert reason is not None and "`less` is not in the allowed programs" in reason
    assert "git, pytest, ls" in reason
    assert policy.approve("pytest; rm -rf /") is not None
    assert policy.approve("/tmp/git status") is not None  # a path is not the allowed name
    assert policy.approve("./git status") is not None


def test_allowlist_refuses_substitution() -> None:
    reason = CommandPolicy("git").approve("git commit -m $(cat msg)")
    assert reason is not None and "command substitution" in reason
    assert CommandPolicy("echo").approve("echo `whoami`") is not None


def test_ask_once_always_deny() -> None:
    asked: list[tuple[str, str]] = []
    answers = iter(["once", "once", "always", "deny"])

    def ask(command: str, programs: str) -> str:
        asked.append((command, programs))
        return next(answers)

    policy = CommandPolicy("ask", ask=ask)
    assert policy.approve("pytest -q") is None            # once
    assert policy.approve("pytest -x") is None            # once again: asked again
    assert policy.approve("git log | head") is None       # always: remembers git and head
    assert policy.approve("git status") is None           # not asked
    assert policy.approve("head -1 x && git diff") is None  # not asked
    reason = policy.approve("rm -rf build")               # deny
    assert reason is not None and "declined" in reason
    assert asked == [("pytest -q", "pytest"), ("pytest -x", "pytest"),
                     ("git log | head", "git, head"), ("rm -rf build", "rm")]


def test_ask_always_on_unparseable_command_remembers_that_text_only() -> None:
    asked: list[tuple[str, str]] = []

    def ask(command: str, programs: str) -> str:
        asked.append((command, programs))
        return "always"

    policy = CommandPolicy("ask", ask=ask)
    assert policy.approve("echo $(date)") is None
    assert policy.approve("echo $(date)") is None
    assert policy.approve("echo $(id)") is None
    assert asked == [("echo $(date)", "this command"), ("echo $(id)", "this command")]


def test_ask_without_callback_refuses() -> None:
    reason = CommandPolicy("ask").approve("ls")
    assert reason is not None and "--commands all" in reason


def test_describe() -> None:
    assert CommandPolicy("all").describe() == "all commands allowed"
    assert CommandPolicy("git,ls").describe() == "commands allowed: git, ls"


def test_policy_wired_into_run_command(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, approve=CommandPolicy("ls").approve)
    registry = ToolRegistry(core_tools())
    refused = registry.run(ToolCall("1", "run_command", {"command": "touch x"}), ctx)
    assert refused.is_error and refused.content.startswith("command refused: `touch`")
    assert not (tmp_path / "x").exists()
    allowed = registry.run(ToolCall("2", "run_command", {"command": "ls"}), ctx)
    assert not allowed.is_error and allowed.meta["exit_code"] == 0
