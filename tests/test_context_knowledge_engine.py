"""Knowledge and the snapshot scope inside the real context engine, driven through the
real tools: a restore frees tokens and leaves valid chat, and the knowledge survives
the deepest compaction. (A helper for the lead's end-to-end tests, too.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swival.context.engine import ContextEngine, ContextSettings, Storage
from swival.errors import ContextExhausted, ContextOverflowError
from swival.messages import Message, ToolCall, ToolResult
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.knowledge_tools import knowledge_tools
from swival.tools.registry import ToolRegistry
from tests.test_context_knowledge_snapshot import chat_problem

SUMMARY = "Login fails because auth/parser.py:142 calls token.strip() on None."


class Session:
    """The agent's side of the protocol, one tool call per turn, no model."""

    def __init__(self, root: Path, window: int = 8192) -> None:
        self.registry = ToolRegistry([*core_tools(), *knowledge_tools()])
        self.ctx = ToolContext(root=root)
        self.engine = ContextEngine(
            ContextSettings(window=window, max_output_tokens=1024), "You are a coding agent.",
            self.registry.schemas(), storage=Storage(root / ".swival"))
        self.knowledge = self.engine.knowledge
        self.turn = 0

    def call(self, name: str, **args: Any) -> ToolResult:
        self.turn += 1
        self.engine.prepare(self.turn)
        tool_call = ToolCall(id=f"t{self.turn}", name=name, arguments=args)
        self.engine.add_assistant(Message(role="assistant", tool_calls=(tool_call,)))
        result = self.registry.run(tool_call, self.ctx)
        if result.effect is not None:
            result, _events = self.engine.apply_effect(tool_call, result, self.turn)
        final = self.engine.add_tool_result(tool_call, result,
                                            read_only=self.registry.is_read_only(name))
        self.engine.after_tool_batch(self.turn)
        return final


@pytest.fixture
def session(tmp_path: Path) -> Session:
    for n in range(3):
        body = "\n".join(f"def handler_{n}_{i}(token):  return token.strip()  # {i}"
                         for i in range(120))
        (tmp_path / f"mod{n}.py").write_text(body + "\n")
    s = Session(tmp_path)
    s.engine.add_user("Why does login fail? Investigate, then fix it.")
    return s


def test_restore_frees_tokens_and_pins_summary(session: Session) -> None:
    engine = session.engine
    session.call("think", thought="The failure is probably in token parsing.")
    session.call("todo", action="add", text="fix the None token")
    session.call("snapshot", action="save", label="investigation")
    for n in range(3):
        session.call("read_file", file_path=f"mod{n}.py")
    before = engine.estimate()
    result = session.call("snapshot", action="restore", summary=SUMMARY)
    assert not result.is_error, result.content
    after = engine.estimate()
    print(f"snapshot restore: {before} -> {after} tokens")
    assert after < before - 1500
    assert chat_problem(engine.history, pending_ok=False) is None
    sent = engine.messages()
    assert any(SUMMARY in m.content for m in sent[:2])  # the pinned block
    session.call("read_file", file_path="mod0.py", limit=5)
    assert SUMMARY in "\n".join(m.content for m in engine.messages())


def test_dirty_scope_needs_force(session: Session) -> None:
    session.call("snapshot", action="save")
    session.call("read_file", file_path="mod0.py")
    session.call("write_file", file_path="notes.txt", content="x\n")
    refused = session.call("snapshot", action="restore", summary=SUMMARY)
    assert refused.is_error and "force=true" in refused.content
    assert refused.meta["summary"] == ("not collapsed: write_file changed things since the "
                                       "checkpoint; the model must confirm with force")
    forced = session.call("snapshot", action="restore", summary=SUMMARY, force=True)
    assert not forced.is_error
    assert chat_problem(session.engine.history, pending_ok=False) is None


def test_knowledge_survives_the_deepest_compaction(session: Session) -> None:
    engine = session.engine
    session.call("think", thought="Suspect the token parser.")
    session.call("todo", action="add", text="guard token against None")
    session.call("read_file", file_path="mod1.py")
    session.call("snapshot", action="restore", summary=SUMMARY)
    for n in range(3):
        session.call("read_file", file_path=f"mod{n}.py")
    with pytest.raises(ContextExhausted):  # compact one level deeper each time, to the end
        for _ in range(4):
            engine.on_overflow(ContextOverflowError("too long", window=8192), session.turn)
    pinned = "\n".join(m.content for m in engine.messages()[:2])
    assert "Suspect the token parser." in pinned
    assert "#1 guard token against None" in pinned
    assert SUMMARY in pinned
    assert "Why does login fail?" in pinned  # the ledger keeps the request
    assert chat_problem(engine.history, pending_ok=False) is None
