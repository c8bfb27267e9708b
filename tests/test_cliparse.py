"""The command line parses exactly as stock typer does, without loading pydantic for the
options that need no conversion (swival/cliparse.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from swival import cli
from swival.cliparse import LazyCommand

ARGVS = [
    [],
    ["--provider", "llamacpp", "--base-url", "http://127.0.0.1:9/v1"],
    ["-p", "fix the tests"],
    ["explain main.py", "--model", "qwen2.5-coder:7b", "--api-key", "sk-1"],
    ["--add-dir", "../lib", "--add-dir", "/tmp/x", "--add-dir-ro", "docs", "--pass-env", "TOK"],
    ["--max-context-tokens", "8192", "--temperature", "0.5", "--retries", "0"],
    ["--output-format", "stream-json", "--json", "-q", "task"],
    ["--config", "other.toml", "--init-config", "stdout"],
    ["--yolo", "--no-mcp", "--commands", "ls,cat", "--fetch", "none", "--untrust"],
    ["-c", "--read-only", "--no-allow-net", "--edits", "ask", "--sandbox", "off"],
    ["--resume", "20260101-abc", "--subagent-tools", "read-only", "--", "--not-an-option"],
]
BAD_ARGVS = [
    ["--max-context-tokens", "lots"],
    ["--temperature", "warm"],
    ["--output-format", "yaml"],
    ["--init-config", "elsewhere"],
    ["--no-such-option"],
]


def _stock() -> typer.core.TyperCommand:
    """The same options as a plain typer command, converting every value the usual way."""
    stock = typer.Typer(
        add_completion=True, context_settings={"help_option_names": ["-h", "--help"]}
    )
    stock.command()(cli.run)
    command = typer.main.get_command(stock)
    assert not isinstance(command, LazyCommand)
    return command


def _parse(command: Any, argv: list[str]) -> dict[str, Any]:
    return dict(command.make_context("swival", list(argv)).params)


def _error(command: Any, argv: list[str]) -> tuple[type, str]:
    with pytest.raises(Exception) as caught:
        command.make_context("swival", list(argv))
    return type(caught.value), caught.value.format_message()


@pytest.mark.parametrize("argv", ARGVS, ids=" ".join)
def test_values_are_those_typer_gives(argv: list[str]) -> None:
    ours = typer.main.get_command(cli.app)
    assert isinstance(ours, LazyCommand)
    got, want = _parse(ours, argv), _parse(_stock(), argv)
    assert got == want
    assert [type(v) for v in got.values()] == [type(v) for v in want.values()]


@pytest.mark.parametrize("argv", BAD_ARGVS, ids=" ".join)
def test_bad_values_get_typer_s_errors(argv: list[str]) -> None:
    assert _error(typer.main.get_command(cli.app), argv) == _error(_stock(), argv)


def test_text_options_do_not_load_pydantic(tmp_path: Path) -> None:
    """What a launch usually gives (text options) parses without pydantic; a number still
    goes through typer's conversion."""
    code = (
        "import sys, typer\n"
        "from swival.cli import app\n"
        "command = typer.main.get_command(app)\n"
        "command.make_context('swival', ['--provider', 'llamacpp', '--base-url', 'http://h',"
        " '--add-dir', 'x', '-q', 'task'])\n"
        "print('pydantic' in sys.modules)\n"
        "ctx = command.make_context('swival', ['--max-context-tokens', '8192'])\n"
        "print(repr(ctx.params['max_context_tokens']))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "8192"]
