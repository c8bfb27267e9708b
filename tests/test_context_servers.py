"""The real agent, tools and context engine against loopback servers that count prompts
the way real ones do (tests/countingserver.py), running the scripted sessions of
benchmarks/scenarios.py: no prompt over the window, none cut silently (or, where a
server hides its window, cut at most twice), the task in every prompt the model sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.scenarios import SCENARIOS, Scenario, workspace
from swival.config import Settings
from swival.events import (
    Compacted,
    Event,
    ModelCallStarted,
    Notice,
    ReplyRestarted,
    TurnFinished,
)
from swival.session import Session, open_session
from tests.countingserver import CountingServer
from tests.fakeserver import text, tools


def run_scenario(server: CountingServer, scenario: Scenario, root: Path,
                 **settings: object) -> list[Event]:
    return scenario_session(server, scenario, root, **settings)[0]


def scenario_session(server: CountingServer, scenario: Scenario, root: Path,
                     **settings: object) -> tuple[list[Event], Session]:
    """The scripted session run through a real session against `server`."""
    workspace(root)
    server.script(*(tools([(s.tool, s.args)], content=s.say) for s in scenario.steps),
                  text(scenario.answer))
    base = server.v1_url if server.kind == "openai" else server.url
    provider = "generic" if server.kind == "openai" else server.kind
    session = open_session(Settings(provider=provider, base_url=base, project_root=root,
                                    yolo=True, **settings),  # type: ignore[arg-type]
                           interactive=False)
    return list(session.agent.run_turn(scenario.task)), session


def _start(**kw: object) -> CountingServer:
    return CountingServer(**kw).start()  # type: ignore[arg-type]


@pytest.mark.parametrize("counts", ["uncached", "total+cached"])
def test_ollama_counting_long_haul_never_truncated(tmp_path: Path, counts: str) -> None:
    """Older Ollama leaves KV-cache hits out of prompt_eval_count: a well-reused prefix
    must not make us under-count (it once drove calibration to 0.66 and a prompt of
    8,269 tokens into an 8,192 num_ctx, cutting the task off)."""
    scenario = SCENARIOS["long-haul"]
    server = _start(kind="ollama", window=8192, counts=counts, truncate=True,
                    marker=scenario.task[:80])
    try:
        events = run_scenario(server, scenario, tmp_path)
    finally:
        server.stop()
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    assert len(server.seen) == len(scenario.steps) + 1  # recap calls are counted apart
    assert server.truncations == 0, [s for s in server.seen if s.truncated]
    assert server.without_marker == 0
    assert max(s.total for s in server.seen) <= 8192
    if counts == "uncached":  # the cache really was hit, so the figures really were low
        assert sum(s.cached for s in server.seen) > sum(s.kept for s in server.seen) / 2


@pytest.mark.parametrize("name", ["investigate", "long-haul"])
def test_tokenizer_counting_more_than_ours_never_overflows(tmp_path: Path, name: str) -> None:
    """A server whose tokenizer counts 15 % more than cl100k and that offers no count of
    its own (LM Studio): calibration on the prompt sizes it reports catches up before
    the window is reached, so it never has to reject a prompt."""
    server = _start(kind="lmstudio", window=8192, scale=1.15)
    try:
        events, session = scenario_session(server, SCENARIOS[name], tmp_path)
    finally:
        server.stop()
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    assert max(s.total for s in server.seen) <= 8192
    assert not [e for e in events if isinstance(e, Notice) and "rejected" in e.text]
    assert not [e for e in events if isinstance(e, Compacted) and "overflow" in e.reason]
    assert not [path for _, path in server.hits if path in ("/apply-template", "/tokenize")]
    # learned from its figures (its chat template adds more tokens than our overhead)
    assert session.agent.context.usage().factor >= 1.15


def test_silent_truncation_is_learned_from_the_first_cut_reply(tmp_path: Path) -> None:
    """An OpenAI-compatible endpoint (Ollama's /v1) that silently drops the front of
    prompts over a 4,096 window it does not report: we budget on 8,192 until the
    first cut reply shows the real window, then compact and ask again."""
    scenario = SCENARIOS["investigate"]
    server = _start(kind="openai", window=4096, truncate=True, marker=scenario.task[:80])
    try:
        events = run_scenario(server, scenario, tmp_path)
    finally:
        server.stop()
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    assert 1 <= server.truncations <= 2
    assert server.without_marker <= 2
    learned = [e for e in events if isinstance(e, ReplyRestarted) and "4096 tokens" in e.reason]
    assert learned, "the user is told the server cut the prompt (and the reply is void)"


def test_llamacpp_counts_exactly_before_the_first_request_and_near_the_gate(
        tmp_path: Path) -> None:
    """llama.cpp renders its template and tokenizes: the engine calibrates on that count
    before its first request (so even a tokenizer 30 % heavier than ours is budgeted
    exactly from the start) and again when nearing the trigger, not on every request."""
    server = _start(kind="llamacpp", window=8192, scale=1.3)
    try:
        events = run_scenario(server, SCENARIOS["long-haul"], tmp_path)
    finally:
        server.stop()
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    started = [e for e in events if isinstance(e, ModelCallStarted)]
    assert abs(started[0].prompt_tokens - server.seen[0].total) <= 2
    asked = sum(1 for method, path in server.hits if path == "/apply-template")
    assert server.hits.count(("POST", "/tokenize")) == asked
    assert 2 <= asked < len(server.seen) // 2
    assert max(s.total for s in server.seen) <= 8192
    assert not [e for e in events if isinstance(e, Notice) and "rejected" in e.text]


@pytest.mark.parametrize("kind", ["llamacpp", "lmstudio"])
def test_many_tiny_turns_at_4k_never_ask_for_more_reply_than_the_window_has(
        tmp_path: Path, kind: str) -> None:
    """Hundreds of tiny turns: each message carries its template's overhead, so the
    server's count drifts ahead of ours faster than the moving average follows (it once
    sent 68 of 301 requests whose prompt plus max_tokens passed the window). Its last
    figure plus what was appended since is a floor for the next prompt."""
    (tmp_path / "a.txt").write_text("alpha\n")
    server = _start(kind=kind, window=4096, marker="TASKMARK")
    server.script(*(tools([("run_command", {"command": f"echo step {i}"})] if i % 3 else
                          [("read_file", {"file_path": "a.txt"})]) for i in range(150)),
                  text("Done."))
    try:
        session = open_session(Settings(provider=kind, base_url=server.url,
                                        project_root=tmp_path, yolo=True, max_turns=160),
                               interactive=False)
        events = list(session.agent.run_turn("count things TASKMARK"))
    finally:
        server.stop()
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    asked = [body for body in server.requests if body.get("tools")]
    assert len(asked) == len(server.seen) == 151
    over = [(seen.total, body["max_tokens"]) for seen, body in zip(server.seen, asked,
                                                                    strict=True)
            if seen.total + body["max_tokens"] > 4096]
    assert not over
    assert server.without_marker == 0


def test_a_rewrite_after_a_learned_cut_is_not_taken_for_another_cut(tmp_path: Path) -> None:
    """Ollama's /v1 cutting at 4,096 while we budget on 8,192, with many tiny turns: the
    server counts 1.4 times ours by then, the cut is learned, and the rewrite brings the
    ratio back near 1. The first figure after it must not read as a second cut against
    the old ratio (it once learned 2,048 and stopped the run with exit 5)."""
    (tmp_path / "a.txt").write_text("alpha\n")
    server = _start(kind="openai", window=4096, truncate=True, marker="TASKMARK")
    server.script(*(tools([("run_command", {"command": f"echo step {i}"})] if i % 3 else
                          [("read_file", {"file_path": "a.txt"})]) for i in range(60)),
                  text("Done."))
    try:
        session = open_session(Settings(provider="generic", base_url=server.v1_url,
                                        project_root=tmp_path, yolo=True, max_turns=70),
                               interactive=False)
        events = list(session.agent.run_turn("count things TASKMARK"))
    finally:
        server.stop()
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    assert session.agent.context.budget.window == 4096
    assert 1 <= server.truncations <= 3
    learned = [e for e in events if isinstance(e, ReplyRestarted) and "tokens" in e.reason]
    assert len(learned) == 1, [e.reason for e in learned]
