"""think, todo and snapshot as tools: argument checks, effects, read-only flags, and
the token cost of their schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swival.context.tokens import TokenCounter
from swival.effects import SnapshotEffect, ThinkEffect, TodoEffect
from swival.messages import ToolCall
from swival.render.lines import outcome
from swival.tools.base import ToolContext
from swival.tools.knowledge_tools import knowledge_tools
from swival.tools.registry import ToolRegistry

SCHEMA_BUDGET = 300


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(knowledge_tools())


def call(registry: ToolRegistry, tmp_path: Path, name: str, **args: Any) -> Any:
    result = registry.run(ToolCall(id="c1", name=name, arguments=args), ToolContext(root=tmp_path))
    return result


def test_three_tools_in_order_all_read_only() -> None:
    tools = knowledge_tools()
    assert [t.spec.name for t in tools] == ["think", "todo", "snapshot"]
    assert all(t.read_only for t in tools)


def test_schemas_fit_token_budget() -> None:
    counter = TokenCounter()
    assert counter.exact, "tiktoken's cl100k_base should load offline from litellm's copy"
    sizes = {
        t.spec.name: counter.text(json.dumps(t.spec.schema(), ensure_ascii=False, sort_keys=True))
        for t in knowledge_tools()
    }
    print("knowledge tool schema tokens:", sizes, "total", sum(sizes.values()))
    assert sum(sizes.values()) <= SCHEMA_BUDGET


def test_snapshot_description_says_when_to_use_it() -> None:
    text = knowledge_tools()[2].spec.description.lower()
    assert "restore" in text and "summary" in text and "free context" in text
    assert "after reading" in text


def test_think_returns_effect(registry: ToolRegistry, tmp_path: Path) -> None:
    result = call(registry, tmp_path, "think", thought="  the bug is in parse()  ",
                  revises=2, branch="alt")
    assert not result.is_error
    assert result.effect == ThinkEffect("the bug is in parse()", None, 2, "alt")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"thought": "   "}, "`thought` is empty"),
        ({"thought": "x", "thought_number": 0}, "`thought_number` must be a whole number >= 1"),
        ({"thought": "x", "revises": -3}, "`revises` must be"),
        ({"thought": "x" * 5000}, "split it"),
    ],
)
def test_think_rejects_bad_arguments(
    registry: ToolRegistry, tmp_path: Path, args: dict[str, Any], fragment: str
) -> None:
    result = call(registry, tmp_path, "think", **args)
    assert result.is_error and fragment in result.content
    assert result.effect is None


def test_todo_effects(registry: ToolRegistry, tmp_path: Path) -> None:
    add = call(registry, tmp_path, "todo", action="add", text="write tests")
    assert add.effect == TodoEffect("add", "write tests", None)
    done = call(registry, tmp_path, "todo", action="done", id=3)
    assert done.effect == TodoEffect("done", None, 3)
    assert call(registry, tmp_path, "todo", action="list").effect == TodoEffect("list")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"action": "add"}, "todo add needs `text`"),
        ({"action": "add", "text": "  "}, "todo add needs `text`"),
        ({"action": "done"}, "todo done needs `id`"),
        ({"action": "remove"}, "todo remove needs `id`"),
        ({"action": "finish", "id": 1}, "must be one of"),
        ({"action": "add", "text": "y" * 400}, "keep an item under"),
    ],
)
def test_todo_rejects_bad_arguments(
    registry: ToolRegistry, tmp_path: Path, args: dict[str, Any], fragment: str
) -> None:
    result = call(registry, tmp_path, "todo", **args)
    assert result.is_error and fragment in result.content


def test_snapshot_effects(registry: ToolRegistry, tmp_path: Path) -> None:
    save = call(registry, tmp_path, "snapshot", action="save", label="auth")
    assert save.effect == SnapshotEffect("save", "auth", None, False)
    summary = "parse() in auth/parser.py:142 lacks a None check"
    restore = call(registry, tmp_path, "snapshot", action="restore", summary=summary, force=True)
    assert restore.effect == SnapshotEffect("restore", None, summary, True)
    assert call(registry, tmp_path, "snapshot", action="status").effect == \
        SnapshotEffect("status")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"action": "restore"}, "snapshot restore needs `summary`"),
        ({"action": "restore", "summary": "done"}, "write the findings out"),
        ({"action": "undo"}, "must be one of"),
        ({"action": "restore", "summary": "a long enough summary here", "force": "yes"},
         "must be of type boolean"),
    ],
)
def test_snapshot_rejects_bad_arguments(
    registry: ToolRegistry, tmp_path: Path, args: dict[str, Any], fragment: str
) -> None:
    result = call(registry, tmp_path, "snapshot", **args)
    assert result.is_error and fragment in result.content


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ({"action": "restore"}, "restore refused: no summary of the findings given"),
        ({"action": "restore", "summary": "done"},
         "restore refused: a summary of 4 characters is too short"),
        ({"action": "restore", "summary": "x"},
         "restore refused: a summary of 1 character is too short"),
    ],
)
def test_snapshot_refusal_is_worded_for_the_person(
    registry: ToolRegistry, tmp_path: Path, args: dict[str, Any], shown: str
) -> None:
    assert outcome(call(registry, tmp_path, "snapshot", **args)) == shown
