"""Calibration knows what the server counted, and a cut prompt is noticed on the first
reply that shows it (the engine's public record_usage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from swival.context.calibration import Calibration, Reading
from swival.context.engine import ContextEngine, ContextSettings, Storage
from swival.messages import Message, ToolCall, ToolResult, Usage


def engine_with(tmp_path: Path, window: int, tokens: int, *,
                counts_include_cache: bool = True) -> ContextEngine:
    """An engine holding a conversation of about `tokens` tokens."""
    engine = ContextEngine(
        ContextSettings(window=window, counts_include_cache=counts_include_cache),
        "You are a coding agent.", [], storage=Storage(tmp_path))
    engine.add_user("read the sources")
    n = 0
    while engine.estimate() < tokens:
        n += 1
        call = ToolCall(f"c{n}", "read_file", {"file_path": f"m{n}.py"})
        engine.add_assistant(Message("assistant", tool_calls=(call,)))
        body = "\n".join(f"value_{n}_{i} = compute({i}) + {n}" for i in range(20))
        engine.add_tool_result(call, ToolResult(body, meta={"kind": "file"}), read_only=True)
    return engine


def test_count_that_may_leave_out_the_cache_only_raises_the_estimate(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, 32768, 4000, counts_include_cache=False)
    prepared = engine.prepare(1)
    ours = prepared.estimated_tokens
    for _ in range(10):  # a cache hit makes Ollama's figure small: not evidence
        assert engine.record_usage(Usage(prompt_tokens=ours // 3), prepared) is None
    assert engine.estimate() == ours
    engine.record_usage(Usage(prompt_tokens=int(ours * 1.2)), prepared)  # a floor
    assert engine.estimate() >= int(ours * 1.2) - 1


def test_cached_figure_makes_the_count_complete(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, 32768, 4000, counts_include_cache=False)
    prepared = engine.prepare(1)
    ours = prepared.estimated_tokens
    for _ in range(10):
        engine.record_usage(Usage(int(ours * 0.8), 5, cached_tokens=int(ours * 0.7)), prepared)
    assert 0.79 * ours <= engine.estimate() <= 0.83 * ours


@pytest.mark.parametrize("reported", [8190, 5000])
def test_cut_prompt_teaches_the_window_at_once(tmp_path: Path, reported: int) -> None:
    """Pinned just under a power of two, or far below our count: the server cut it."""
    engine = engine_with(tmp_path, 16384, 9000)
    prepared = engine.prepare(1)
    cut = engine.record_usage(Usage(prompt_tokens=reported), prepared)
    assert cut is not None and cut.kind == "truncated" and cut.window == 8192
    engine.on_overflow(cut, 1)
    assert engine.budget.window == 8192
    assert engine.prepare(2).estimated_tokens < 8192 * 0.6


def test_a_near_count_or_a_small_prompt_is_not_a_cut(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, 16384, 9000)
    prepared = engine.prepare(1)
    ours = prepared.estimated_tokens
    assert engine.record_usage(Usage(prompt_tokens=int(ours * 0.85)), prepared) is None
    small = engine_with(tmp_path / "small", 8192, 900)
    prepared = small.prepare(1)  # SmolLM2's template drops the tool schemas: 32 tokens
    assert small.record_usage(Usage(prompt_tokens=32), prepared) is None
    assert small.budget.window == 8192


def test_a_count_at_the_window_is_a_full_prompt_unless_more_was_expected() -> None:
    """One rule for a count pinned at a power of two: a cut only when we expected more
    than it. At the window itself with our count under it the prompt simply was that
    big (no reply is thrown away); once the server's ratio is known and says the prompt
    was over the window, it was cut, and the window stays what it is."""
    assert Calibration().judge(Reading(8000, 6900, complete=True), 8192, 6900) is None
    calibration = Calibration()
    calibration.observe(Reading(3900, 3000, complete=True))  # this server counts 30 % more
    cut = calibration.judge(Reading(8150, 6900, complete=True), 8192, 7200)
    assert cut is not None and cut.kind == "truncated" and cut.window == 8192


def test_count_without_cache_figure_cannot_show_a_cut(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, 16384, 9000, counts_include_cache=False)
    prepared = engine.prepare(1)
    assert engine.record_usage(Usage(prompt_tokens=2000), prepared) is None
    assert engine.record_usage(Usage(2000, 5, cached_tokens=0), prepared) is not None


def test_usage_holds_the_fixed_parts_steady_while_calibration_moves(tmp_path: Path) -> None:
    """/context's parts are our own count: a server whose tokenizer counts 10 % fewer
    moves the calibration request after request, not the system prompt's or the tool
    schemas' figures; the total as the server counts it follows the factor."""
    engine = engine_with(tmp_path, 32768, 4000)
    first = engine.usage()
    prepared = engine.prepare(1)
    seen = []
    for _ in range(6):
        engine.record_usage(Usage(prompt_tokens=int(prepared.estimated_tokens * 0.9)),
                            prepared)
        usage = engine.usage()
        seen.append((usage.system, usage.tools, usage.tool_results, usage.counted))
        prepared = engine.prepare(1)
    assert set(seen) == {(first.system, first.tools, first.tool_results, first.counted)}
    assert usage.factor < 0.97 and usage.used == engine.estimate() < usage.counted
    assert usage.counted == (usage.system + usage.tools + usage.pinned + usage.user
                             + usage.assistant + usage.tool_results + 3)  # + reply priming
