"""Subagents through the real composition (build_session), agent, tools and context
engine, with a scripted model: the task tool runs a child with a fresh context and
read-only tools (no task of its own), `subagent_tools` widens them only within the
parent's policy, the child's transcript is saved, named and indexed without being
offered to --continue, a child that fails gives the parent a tool error, the answer is
capped, and /context and --json count the children's tokens apart."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from swival.commands import dispatch
from swival.config import load_settings, user_state_dir
from swival.errors import ConfigError, ContextOverflowError, ProviderError
from swival.events import Event, SubagentStep, ToolFinished, TurnFinished
from swival.messages import ToolResult
from swival.oneshot import run_oneshot
from swival.providers.base import ChatRequest
from swival.session import Session, build_session, find_transcript
from swival.state import SessionIndex
from tests.scripted import ScriptedProvider, call, reply

pytestmark = pytest.mark.timeout(60)
ASK = call("task", description="survey the notes", prompt="Read notes.txt and report the "
           "line that names the owner.")


def session_for(root: Path, script: Sequence[Any], window: int = 8192,
                **cli: Any) -> tuple[Session, ScriptedProvider, list[Event]]:
    """A one-shot session whose subagent steps are collected in the returned list."""
    provider = ScriptedProvider(script, window=window)
    session = build_session(load_settings(cli, cwd=root), provider, interactive=False)
    steps: list[Event] = []
    session.agent.tool_ctx.on_event = steps.append
    return session, provider, steps


def routed(parent: list[Any], child: list[Any]) -> list[Any]:
    """Script items that answer the parent's requests (they offer `task`) from `parent`
    and a subagent's from `child`, whatever order they come in."""
    queues = {True: list(parent), False: list(child)}

    def answer(request: ChatRequest) -> Any:
        return queues["task" in names(request)].pop(0)

    return [answer] * (len(parent) + len(child))


def turn(session: Session, text: str = "who owns this?") -> list[Event]:
    return list(session.agent.run_turn(text))


def task_result(events: list[Event]) -> ToolResult:
    return next(e.result for e in events if isinstance(e, ToolFinished)
                and e.call.name == "task")


def names(request: ChatRequest) -> list[str]:
    return [schema["function"]["name"] for schema in request.tools]


def test_a_child_has_read_only_tools_no_task_and_only_its_answer_returns(
        tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("owner: ada\n" + "filler line\n" * 200)
    session, provider, steps = session_for(tmp_path, [
        ASK,
        call("read_file", file_path="notes.txt"),
        call("write_file", file_path="planted.txt", content="x"),
        call("task", description="nested", prompt="go deeper"),
        reply("notes.txt:1: owner: ada", usage=(700, 9)),
        reply("Ada owns it."),
    ])
    events = turn(session)
    parent, child = provider.requests[0], provider.requests[1]
    assert "task" in names(parent) and "write_file" in names(parent)
    assert names(child) == ["read_file", "list_files", "grep", "fetch_url", "think", "todo",
                            "snapshot"]
    note = child.messages[-1].content
    assert note.startswith("Read notes.txt and report") and "You are a subagent" in note
    assert "at most 4000 characters" in note
    results = [s.result for s in steps if isinstance(s, SubagentStep) and s.result]
    refused = results[1]
    assert refused.is_error and refused.content.startswith(
        "error: write_file is not available to you: you are a read-only subagent")
    assert "say in your answer what should change" in refused.content
    assert refused.meta["summary"] == "refused: a read-only subagent has no write_file"
    assert "cannot start another" in results[2].content and results[2].is_error
    first, started = steps[0], steps[1]
    assert isinstance(first, SubagentStep) and first.description == "survey the notes"
    assert first.prompt == "Read notes.txt and report the line that names the owner."
    assert isinstance(started, SubagentStep) and started.result is None
    assert started.call is not None and started.call.name == "read_file"
    assert not (tmp_path / "planted.txt").exists()
    result = task_result(events)
    assert not result.is_error and result.content.endswith("\nnotes.txt:1: owner: ada")
    assert result.content.startswith('[answer of the subagent for "survey the notes", after '
                                     '4 model calls and 3 tool calls; its whole conversation: '
                                     ".swival/sessions/")
    final = provider.requests[-1]
    assert "filler line" not in json.dumps([m.content for m in final.messages])
    assert isinstance(events[-1], TurnFinished) and events[-1].answer == "Ada owns it."
    assert events[-1].usage.prompt_tokens == 0  # the child's 700 are counted apart
    assert ("Subagents: 1 task, 700 prompt + 9 output tokens in their own contexts (not in "
            "the figures above).") in dispatch(
        "/context", session.agent).footer


def test_labels_are_cut_at_a_word_counts_agree_and_an_empty_prompt_is_said_briefly(
        tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("owner: ada\n")
    long = ("survey every note in the project and report the owner of each one that names "
            "an owner")
    session, provider, steps = session_for(tmp_path, [
        call("task", description="empty", prompt="  "),
        call("task", description=long, prompt="Read notes.txt and say who owns it."),
        call("read_file", file_path="notes.txt"),
        reply("ada"),
        reply("Ada."),
    ])
    events = turn(session)
    empty, answered = [e.result for e in events if isinstance(e, ToolFinished)]
    assert empty.is_error and empty.meta["summary"] == (
        "not started: the model gave no instructions")
    label = "survey every note in the project and report the owner of…"
    assert steps[0].description == label and len(label) <= 60  # not "...of each o"
    assert answered.content.startswith(f'[answer of the subagent for "{label}", after '
                                       "2 model calls and 1 tool call;")
    assert answered.meta["summary"] == "answered after 1 tool call"


def test_subagent_tools_widen_only_within_the_parents_policy(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    session, provider, steps = session_for(tmp_path, [
        ASK,
        call("read_file", file_path="a.txt"),
        call("edit_file", file_path="a.txt", old_string="old", new_string="new"),
        call("run_command", command="touch made-by-command"),
        reply("Changed a.txt."),
        reply("Done."),
    ], subagent_tools="edit_file,run_command")
    events = turn(session)
    assert set(names(provider.requests[1])) >= {"edit_file", "run_command"}
    assert "write_file" not in names(provider.requests[1])
    assert not session.agent.tools.is_read_only("task")  # its children change things
    assert (tmp_path / "a.txt").read_text() == "new\n"
    command = [s.result for s in steps if isinstance(s, SubagentStep) and s.result][2]
    assert command.is_error and not (tmp_path / "made-by-command").exists()  # no terminal
    assert not task_result(events).is_error
    undone = dispatch("/undo", session.agent)  # the child's edit belongs to the request
    assert 'Undid the file edits of "who owns this?"' in undone.text
    assert (tmp_path / "a.txt").read_text() == "old\n"

    asked, _, _ = session_for(tmp_path, [
        ASK, call("read_file", file_path="a.txt"),
        call("edit_file", file_path="a.txt", old_string="old", new_string="new"),
        reply("Could not."), reply("Done.")], subagent_tools="all", edits="ask")
    turn(asked)
    assert (tmp_path / "a.txt").read_text() == "old\n"  # nobody to approve the edit
    # Plan mode (--read-only) keeps `task`, and its children are read-only too.
    planning, provider, steps = session_for(tmp_path, [
        ASK, call("edit_file", file_path="a.txt", old_string="old", new_string="new"),
        reply("It should change old to new."), reply("A plan.")],
        subagent_tools="all", read_only=True)
    events = turn(planning)
    assert "task" in names(provider.requests[0]) and planning.agent.tools.is_read_only("task")
    assert "edit_file" not in names(provider.requests[1])
    assert "read_file" in names(provider.requests[1])
    refused = [s.result for s in steps if isinstance(s, SubagentStep) and s.result][0]
    assert refused.is_error and "you are a read-only subagent" in refused.content
    assert (tmp_path / "a.txt").read_text() == "old\n"
    assert "It should change old to new." in task_result(events).content
    dispatch("/plan", planning.agent)  # out of plan mode: its children may write again
    assert not planning.agent.tools.is_read_only("task")
    with pytest.raises(ConfigError, match="subagent_tools: no tool named wirte_file"):
        session_for(tmp_path, [], subagent_tools="wirte_file")


def test_the_childs_transcript_is_named_indexed_and_never_continued(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("owner: ada\n")
    session, _, _ = session_for(tmp_path, [ASK, reply("owner: ada"), reply("Ada.")])
    result = task_result(turn(session))
    named = result.content.split("its whole conversation: ")[1].split("]")[0]
    parent_id = session.agent.context.session_id
    assert named == f".swival/sessions/{parent_id}-task1.jsonl"
    records = [json.loads(line) for line in (tmp_path / named).read_text().splitlines()]
    said = [r["message"]["content"] for r in records if r["type"] == "message"]
    assert said[0].startswith("Read notes.txt") and said[-1] == "owner: ada"
    index = SessionIndex(user_state_dir(os.environ))
    child_id = f"{parent_id}-task1"
    assert child_id in index.recorded(tmp_path) and index.strangers(tmp_path) == 0
    assert index.transcripts(tmp_path) == [parent_id]
    settings = load_settings({}, cwd=tmp_path)
    assert find_transcript(settings, None, latest=True) == session.agent.context.transcript_path
    assert find_transcript(settings, child_id, latest=False) == tmp_path / named
    listed = dispatch("/sessions", session.agent)
    assert [row[:2] for row in listed.rows] == [(parent_id, "now (this one)")]


@pytest.mark.parametrize(("child", "said"), [
    ([call("list_files", path="."), call("grep", pattern="x"), call("read_file",
                                                                     file_path="notes.txt")],
     "it reached its limit of 2 model calls without a final answer (subagent_max_turns)"),
    ([ProviderError("The server at http://127.0.0.1:1 answered 500: out of memory.")],
     "The server at http://127.0.0.1:1 answered 500: out of memory."),
    ([ContextOverflowError("too long", prompt_tokens=90_000)] * 6,
     "The conversation no longer fits the 8192-token context window"),
], ids=["turn limit", "provider error", "context exhausted"])
def test_a_failing_child_gives_the_parent_a_tool_error(
        tmp_path: Path, child: list[Any], said: str) -> None:
    (tmp_path / "notes.txt").write_text("owner: ada\n")
    session, _, _ = session_for(tmp_path, routed([ASK, reply("I will look myself.")], child),
                                subagent_max_turns=2)
    events = turn(session)
    result = task_result(events)
    assert result.is_error and said in result.content
    assert result.content.startswith('error: the subagent for "survey the notes" stopped '
                                     "without an answer")
    assert "Traceback" not in result.content and "-task1.jsonl" in result.content
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "done"
    assert "1 without an answer" in dispatch("/context", session.agent).footer


def test_a_long_answer_is_capped_and_the_limit_scales_with_the_window(
        tmp_path: Path) -> None:
    long = "".join(f"finding {n}: something the child saw\n" for n in range(400))
    session, provider, _ = session_for(tmp_path, [ASK, reply(long), reply("ok")])
    result = task_result(turn(session))
    assert len(result.content) < 4000 + 600  # header, the head, where the rest is
    assert "[answer cut at" in result.content and result.meta["kind"] == "file"
    saved = tmp_path / result.meta["path"]
    assert saved.read_text() == long.strip()
    small, provider, _ = session_for(tmp_path, [ASK, reply("short"), reply("ok")],
                                     window=4096)
    turn(small)
    share = int(0.2 * small.agent.context.budget.input_budget * 3)  # 3 characters a token
    assert f"at most {share} characters" in provider.requests[1].messages[-1].content
    assert share < 4000


def test_json_counts_the_children_apart(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("owner: ada\n")
    provider = ScriptedProvider([call("task", description="survey", prompt="who owns it?",
                                      usage=(300, 20)),
                                 reply("owner: ada", usage=(500, 7)),
                                 reply("Ada.", usage=(340, 3))])
    session = build_session(load_settings({"json": True}, cwd=tmp_path), provider,
                            interactive=False)
    assert run_oneshot(session, "who owns this?") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tokens"] == {"prompt": 640, "completion": 23}
    assert report["subagents"] == {"tasks": 1, "failed": 0,
                                   "tokens": {"prompt": 500, "completion": 7}}


def test_a_projects_subagent_tools_apply_only_when_trusted(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "swival.toml").write_text('subagent_tools = "all"\nsubagent_max_turns = 5\n')
    untrusted = load_settings({}, cwd=tmp_path)
    assert untrusted.subagent_tools == "read-only"
    assert untrusted.held_back == {"subagent_tools": "all"}
    assert untrusted.subagent_max_turns == 5  # a limit, not a power: applies untrusted
    trusted = load_settings({}, cwd=tmp_path, trusted=lambda file, keys: True)
    assert trusted.subagent_tools == "all"


def test_a_childs_saved_outputs_survive_another_sessions_pruning(tmp_path: Path) -> None:
    """A child's spill folder is held as long as the parent runs, like the parent's own:
    the parent's history may quote what the child found."""
    from swival.state import prune_spills

    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(6000)))
    child = [call("read_file", file_path="big.txt"), reply("The owner is on line 1.")]
    session, _, _ = session_for(tmp_path, routed([ASK, reply("Line 1.")], child))
    turn(session)
    out = tmp_path / ".swival" / "out"
    saved = list(out.glob("*-task*/*.txt"))
    assert saved, "the child's read was saved in its own folder"
    prune_spills(out / "another-session", keep=0)
    assert all(path.exists() for path in saved)
