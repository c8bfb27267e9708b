"""Calibration knows what the server counted, and a cut prompt is noticed on the first
reply that shows it (the engine's public record_usage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swival.agent import Agent, AgentConfig, make_summarizer
from swival.context.calibration import Calibration, Reading
from swival.context.engine import ContextEngine, ContextSettings, ServerAid, Storage
from swival.events import Compacted, ReplyRestarted, TurnFinished
from swival.messages import Message, ToolCall, ToolResult, Usage
from swival.prompts import system_prompt
from swival.tools.base import ToolContext
from swival.tools.catalog import default_tools
from swival.tools.registry import ToolRegistry
from tests.scripted import ScriptedProvider, reply


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


def scaled_agent(root: Path, scale: float, over: float = 1.035, *,
                 confirmed: int = 0) -> tuple[Any, str]:
    """The real agent at an 8K window on a scripted server that counts every prompt as
    `scale` times our estimate (its tokenizer), and a first request that makes the very
    first prompt `over` times 4096 by our count."""
    provider = ScriptedProvider([lambda request: reply(
        "Read.", usage=(int(request.estimated_prompt_tokens * scale), 5))] * 3, window=8192)
    registry = ToolRegistry(default_tools())
    engine = ContextEngine(ContextSettings(window=8192, confirmed_window=confirmed),
                           system_prompt(root), registry.schemas(),
                           storage=Storage(root / ".swival"),
                           server=ServerAid(make_summarizer(provider)))
    agent = Agent(provider, registry, engine, ToolContext(root=root), AgentConfig())
    words = int((4096 * over - engine.estimate()) / engine.counter.text(" word7"))
    return agent, " ".join(["word7"] * words)


@pytest.mark.parametrize(("scale", "over"), [(0.95, 1.035), (0.93, 1.06)])
def test_a_tokenizer_counting_under_ours_is_not_a_cut_on_the_first_reply(
        tmp_path: Path, scale: float, over: float) -> None:
    """The first complete count lands just under 4096 only because the server's
    tokenizer counts a few percent under ours: the reply stands (no retry, no
    compaction) and the window stays."""
    agent, request = scaled_agent(tmp_path, scale, over)
    events = list(agent.run_turn(request))
    provider = agent.provider
    sent = provider.requests[0].estimated_prompt_tokens
    assert 4096 * 1.02 < sent < 4096 * 1.08  # pinned by the old 2 % margin
    assert 0.97 * 4096 <= int(sent * scale) < 4096
    assert not [e for e in events if isinstance(e, (ReplyRestarted, Compacted))]
    assert len(provider.requests) == 1 and agent.context.budget.window == 8192
    assert isinstance(events[-1], TurnFinished) and events[-1].answer == "Read."


def test_a_confirmed_window_is_never_unlearned(tmp_path: Path) -> None:
    """A first count pinned under 4096 with our count 10 % over it looks like a cut to
    4096; with 8192 confirmed by the server it is the tokenizer's, and the window stays."""
    reading = Reading(4050, 4500, complete=True)
    calibration = Calibration()
    assert calibration.judge(reading, 8192, 4500, confirmed=8192) is None
    assert calibration.factor < 1.0  # folded in as the tokenizer's ratio
    agent, request = scaled_agent(tmp_path, 0.9, 1.1, confirmed=8192)
    events = list(agent.run_turn(request))
    assert not [e for e in events if isinstance(e, (ReplyRestarted, Compacted))]
    assert agent.context.budget.window == 8192
    unconfirmed, request = scaled_agent(tmp_path / "other", 0.9, 1.1)
    events = list(unconfirmed.run_turn(request))
    assert [e for e in events if isinstance(e, ReplyRestarted)]  # taken for a cut
    assert unconfirmed.context.budget.window == 4096
