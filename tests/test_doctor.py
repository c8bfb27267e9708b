"""`swival --doctor`, the fixed-overhead budget and the start-up overhead warning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from swival.config import Settings, load_settings
from swival.doctor import overhead, parser_lines, session_schemas
from swival.session import build_session
from tests.e2e import run_swival
from tests.fakeserver import text
from tests.scripted import ScriptedProvider


def test_fixed_overhead_is_lean(tmp_path: Path) -> None:
    """System prompt + the schema of every tool a default session sends (`task`
    included), no instruction files: at most 1,400 tokens."""
    parts = overhead(Settings(project_root=tmp_path))
    total = sum(parts.values())
    print(f"fixed overhead: {parts} = {total} tokens (cl100k_base)")
    assert set(parts) == {"system prompt", "tool schemas"}
    assert total <= 1400


@pytest.mark.parametrize("cli", [{}, {"fetch": "none"}, {"subagent_tools": "all"},
                                 {"read_only": True}])
def test_the_doctor_counts_the_tools_a_session_sends(tmp_path: Path,
                                                     cli: dict[str, Any]) -> None:
    settings = load_settings(cli, cwd=tmp_path)
    session = build_session(settings, ScriptedProvider([]), interactive=False)
    try:
        assert session_schemas(settings) == session.agent.tools.schemas()
    finally:
        session.close()
    names = [schema["function"]["name"] for schema in session_schemas(settings)]
    assert "task" in names and ("fetch_url" in names) is (cli != {"fetch": "none"})


def test_the_doctor_gives_the_figure_the_session_and_context_give(tmp_path: Path) -> None:
    """The doctor's fixed overhead, /context's system prompt + tool schemas and the
    start-up warning are one figure, counted the same way."""
    settings = load_settings({}, cwd=tmp_path)
    session = build_session(settings, ScriptedProvider([]), interactive=False)
    try:
        usage = session.agent.context.usage()
    finally:
        session.close()
    parts = overhead(settings)
    assert parts == {"system prompt": usage.system, "tool schemas": usage.tools}


def test_the_doctor_says_when_commands_cannot_be_checked(tmp_path: Path) -> None:
    """A real interpreter in which tree-sitter cannot be imported."""
    assert parser_lines() == ["command check    bash parser loaded"]
    script = ("import sys; sys.modules['tree_sitter'] = None\n"
              "from swival.doctor import parser_lines\n"
              "print('\\n'.join(parser_lines()))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert out.startswith("command check    off: the bash parser could not be loaded (")
    assert "Every command will be asked about" in out and "install Swival again" in out
    assert "Traceback" not in out


def test_doctor_reports_server_window_and_overhead(fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    (tmp_path / "swival.toml").write_text("max_turns = 9\n")
    server = fake_server(kind="llamacpp", window=8192)
    result = run_swival(server, tmp_path, "--doctor")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "llamacpp" in out and server.url in out and "test-model" in out
    assert "8192 tokens (llama.cpp /props n_ctx)" in out
    assert "AGENTS.md" in out and str(tmp_path / "swival.toml") in out
    assert "fixed overhead" in out and "% of the window" in out
    assert "command check    bash parser loaded" in out
    assert not server.requests, "the doctor sends no chat request"


def test_doctor_on_a_dead_server_exits_3(tmp_path: Path) -> None:
    result = run_swival(None, tmp_path, "--provider", "llamacpp", "--base-url",
                        "http://127.0.0.1:9", "--doctor")
    assert result.returncode == 3
    assert "unreachable" in result.stdout and "fixed overhead" in result.stdout


def test_startup_warns_when_overhead_exceeds_a_quarter(fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Always follow the house style. " * 300)
    server = fake_server(kind="llamacpp", window=4096).script(text("ok"))
    result = run_swival(server, tmp_path, "-p", "hi")
    assert result.returncode == 0, result.stderr
    assert "of the 4096-token window" in result.stderr and "AGENTS.md" in result.stderr

