"""`swival --doctor`, the fixed-overhead budget and the start-up overhead warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swival.config import Settings
from swival.doctor import overhead, tool_schemas
from tests.e2e import run_swival
from tests.fakeserver import text


def test_fixed_overhead_is_lean(tmp_path: Path) -> None:
    """System prompt + every tool schema a default session sends (task included), no
    instruction files: at most 1,400 tokens (1,200 before the task tool's 148 counted)."""
    parts = overhead(Settings(project_root=tmp_path))
    total = sum(parts.values())
    print(f"fixed overhead: {parts} = {total} tokens (cl100k_base)")
    assert set(parts) == {"system prompt", "tool schemas"}
    assert total <= 1400


def test_the_doctor_counts_the_schemas_a_session_sends(tmp_path: Path) -> None:
    from swival.config import load_settings
    from swival.session import build_session
    from tests.scripted import ScriptedProvider

    for cli in ({}, {"fetch": "none", "subagent_tools": "all"}, {"read_only": True}):
        settings = load_settings(cli, cwd=tmp_path)
        session = build_session(settings, ScriptedProvider([]), interactive=False)
        try:
            sent = session.agent.tools.schemas()
        finally:
            session.close()
        assert tool_schemas(settings) == sent


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
