"""--edits ask: write_file and edit_file show their diff and wait for the person's answer
(once, always for the file, always for every file, or no); with nobody to ask the edit is
refused with a tool error the model can act on. Also through the installed `swival`
one-shot, where no terminal means refuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swival.config import load_settings
from swival.messages import ToolCall, ToolResult
from swival.tools.approval import EVERY_FILE, Approvals, EditPolicy
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.registry import ToolRegistry
from tests.e2e import run_swival
from tests.fakeserver import FakeServer, Reply


class Person:
    """Answers approval questions from a list and remembers what it was shown."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, tuple[str, ...], str]] = []

    def __call__(self, action: str, scopes: tuple[str, ...], detail: str) -> str:
        self.asked.append((action, scopes, detail))
        answer = self.answers.pop(0)
        return {"file": scopes[0], "every": scopes[-1]}.get(answer, answer)


def make_ctx(root: Path, person: Person | None) -> ToolContext:
    approvals = Approvals(confirm=person)
    return ToolContext(root=root, approve_edit=EditPolicy("ask", approvals).approve)


def write(ctx: ToolContext, path: str, content: str) -> ToolResult:
    return ToolRegistry(core_tools()).run(
        ToolCall("c", "write_file", {"file_path": path, "content": content}), ctx)


def edit(ctx: ToolContext, path: str, old: str, new: str) -> ToolResult:
    registry = ToolRegistry(core_tools())
    registry.run(ToolCall("r", "read_file", {"file_path": path}), ctx)
    args: dict[str, Any] = {"file_path": path, "old_string": old, "new_string": new}
    return registry.run(ToolCall("c", "edit_file", args), ctx)


def test_the_person_sees_the_diff_and_answers_once_per_edit(tmp_path: Path) -> None:
    person = Person("once", "once")
    ctx = make_ctx(tmp_path, person)
    assert not write(ctx, "a.py", "x = 1\n").is_error
    assert not edit(ctx, "a.py", "x = 1", "x = 2").is_error
    (first, scopes, diff_new), (second, _, diff_edit) = person.asked
    assert first == "Create a.py" and second == "Change a.py"
    assert scopes == ("a.py", EVERY_FILE)
    assert "+x = 1" in diff_new and "-x = 1" in diff_edit and "+x = 2" in diff_edit
    assert (tmp_path / "a.py").read_text() == "x = 2\n"


def test_always_for_a_file_then_for_every_file(tmp_path: Path) -> None:
    person = Person("file", "every")
    ctx = make_ctx(tmp_path, person)
    write(ctx, "a.py", "1\n")
    write(ctx, "a.py", "2\n")  # granted for a.py: not asked again
    assert len(person.asked) == 1
    write(ctx, "b.py", "1\n")  # another file: asked, and allowed for every file
    write(ctx, "c.py", "1\n")
    write(ctx, "d/e.py", "1\n")
    assert [action for action, _, _ in person.asked] == ["Create a.py", "Create b.py"]
    assert all((tmp_path / n).exists() for n in ("a.py", "b.py", "c.py", "d/e.py"))


def test_no_leaves_the_file_unchanged_and_tells_the_model(tmp_path: Path) -> None:
    (tmp_path / "keep.py").write_text("keep\n")
    ctx = make_ctx(tmp_path, Person("deny", "deny"))
    result = edit(ctx, "keep.py", "keep", "gone")
    assert result.is_error and "declined" in result.content and "unchanged" in result.content
    assert result.meta["summary"] == "not changed: you declined"
    assert (tmp_path / "keep.py").read_text() == "keep\n"
    # A file that does not exist yet is not written, not "not changed".
    refused = write(ctx, "new.py", "x")
    assert refused.is_error and not (tmp_path / "new.py").exists()
    assert refused.meta["summary"] == "not written: you declined"
    assert "declined creating new.py" in refused.content and "not created" in refused.content


def test_with_nobody_to_ask_every_edit_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, None)
    result = write(ctx, "x.py", "x")
    assert result.is_error and "--edits ask" in result.content
    assert result.meta["summary"] == ("not written: edits need approval (--edits ask) and this "
                                      "run cannot ask")
    assert "nobody is here to approve" in result.content and not (tmp_path / "x.py").exists()
    assert "x.py was not created" in result.content
    (tmp_path / "old.py").write_text("old\n")
    changed = edit(ctx, "old.py", "old", "new")
    assert changed.meta["summary"] == ("not changed: edits need approval (--edits ask) and "
                                       "this run cannot ask")
    assert "old.py was left unchanged" in changed.content
    assert (tmp_path / "old.py").read_text() == "old\n"


def test_auto_asks_nothing(tmp_path: Path) -> None:
    person = Person()
    ctx = ToolContext(root=tmp_path,
                      approve_edit=EditPolicy("auto", Approvals(confirm=person)).approve)
    assert not write(ctx, "x.py", "x").is_error and person.asked == []


def test_a_project_file_may_ask_for_edits_but_stops_asking_only_when_trusted(
        tmp_path: Path) -> None:
    """Asking is safer than editing at once, so an untrusted project may ask for it; it
    may not switch off the asking the user chose in their own config."""
    (tmp_path / "swival.toml").write_text('edits = "ask"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    asks = load_settings({}, cwd=tmp_path, env=env)
    assert asks.edits == "ask" and asks.held_back == {}
    (tmp_path / "cfg" / "swival").mkdir(parents=True)
    (tmp_path / "cfg" / "swival" / "config.toml").write_text('edits = "ask"\n')
    (tmp_path / "swival.toml").write_text('edits = "auto"\n')
    held = load_settings({}, cwd=tmp_path, env=env)
    assert held.edits == "ask" and "edits" in held.held_back
    trusted = load_settings({}, cwd=tmp_path, env=env, trusted=lambda file, keys: True)
    assert trusted.edits == "auto"


@pytest.mark.timeout(60)
def test_one_shot_without_a_terminal_refuses_edits_it_would_ask_about(
        tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    with FakeServer(kind="llamacpp") as server:
        server.script(Reply(tool_calls=(("write_file", {"file_path": "new.py",
                                                        "content": "y = 2\n"}),)),
                      Reply(text="Could not write it."))
        done = run_swival(server, tmp_path, "-p", "make new.py", "--edits", "ask")
        assert done.returncode == 0, done.stderr
        assert not (tmp_path / "new.py").exists()
        told = server.requests[1]["messages"][-1]["content"]
        assert "--edits ask" in told and "nobody is here to approve" in told
        # The progress line says it in the person's words.
        assert ("✗ write_file new.py — not written: edits need approval (--edits ask) and "
                "this run cannot ask") in done.stderr

        server.script(Reply(tool_calls=(("write_file", {"file_path": "new.py",
                                                        "content": "y = 2\n"}),)),
                      Reply(text="Written."))
        yolo = run_swival(server, tmp_path, "-p", "make new.py", "--edits", "ask", "--yolo")
        assert yolo.returncode == 0 and (tmp_path / "new.py").read_text() == "y = 2\n"
