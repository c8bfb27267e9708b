"""Small stand-ins for Knowledge and the snapshot scope, implementing the contract in
/work/briefs/context_contract.md, so the engine's tests do not depend on the real ones.
(This module holds no tests.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from swival.context.engine import ContextEngine, ContextSettings, Extras
from swival.context.tokens import TokenCounter
from swival.effects import ThinkEffect, TodoEffect
from swival.messages import Message, ToolCall, ToolResult

COUNTER = TokenCounter()


@dataclass
class FakeKnowledge:
    notes: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)
    batches: list[tuple[int, tuple[str, ...], bool]] = field(default_factory=list)
    cleared: int = 0
    reloaded: int = 0

    def apply(self, effect: ThinkEffect | TodoEffect, turn: int) -> ToolResult:
        text = effect.thought if isinstance(effect, ThinkEffect) else (effect.text or "")
        self.thoughts.append(text)
        return ToolResult(f"noted: {text}")

    def pinned_sections(self) -> list[str]:
        out = [f"## Thinking\n{t}" for t in self.thoughts]
        return out + [f"## Snapshot\n{s}" for s in self.snapshots]

    def observe_batch(self, turn: int, tool_names: Sequence[str], all_read_only: bool) -> None:
        self.batches.append((turn, tuple(tool_names), all_read_only))

    def tail_notes(self, turn: int) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def add_snapshot_summary(self, label: str | None, summary: str, turn: int) -> str:
        self.snapshots.append(summary)
        return f"[snapshot {label or ''}] {summary}"

    def add_checkpoint(self, text: str, turn: int) -> None:
        self.checkpoints.append(text)

    def checkpoint_text(self) -> str | None:
        return "\n".join(self.checkpoints) or None

    def needs_consolidation(self) -> list[str] | None:
        return None

    def replace_oldest(self, merged: str, count: int) -> None:
        self.checkpoints[:count] = [merged]

    def clear(self) -> None:
        self.cleared += 1
        self.thoughts.clear()

    def reload(self) -> None:
        self.reloaded += 1


@dataclass
class FakeScope:
    checkpoint: int | None = None
    dirty: bool = False

    def save(self, label: str | None, history_len: int) -> str:
        self.checkpoint = history_len
        return f"saved at {history_len}"

    def cancel(self) -> str:
        self.checkpoint = None
        return "cancelled"

    def status(self, history_len: int) -> str:
        return f"checkpoint={self.checkpoint} len={history_len}"

    def note_tool(self, tool_name: str, read_only: bool) -> None:
        self.dirty = self.dirty or not read_only

    def scope_start(self, history: Sequence[Message]) -> int:
        if self.checkpoint is not None:
            return self.checkpoint
        users = [i for i, m in enumerate(history) if m.role == "user"]
        return users[-1] + 1 if users else 0

    def restore_check(self, force: bool) -> str | None:
        return "scope is dirty: pass force=true" if self.dirty and not force else None

    def restored(self, new_history_len: int) -> None:
        self.checkpoint, self.dirty = None, False

    def rewritten(self) -> None:
        self.checkpoint = None

    def reset(self) -> None:
        self.checkpoint, self.dirty = None, False


def fake_collapse(history: Sequence[Message], start: int, recap: str) -> list[Message]:
    """Keep history[:start], the recap, and the in-flight assistant message with the
    answers already given to its other calls."""
    last_assistant = max(i for i, m in enumerate(history) if m.role == "assistant")
    inflight = list(history[last_assistant:]) if last_assistant >= start else []
    return [*history[:start], Message(role="user", content=recap), *inflight]


SCHEMAS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "run_command", "description": "Run a command.",
     "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}},
]


def make_engine(window: int = 8192, **kw: object) -> tuple[ContextEngine, FakeKnowledge]:
    knowledge = FakeKnowledge()
    settings = ContextSettings(window=window,
                               proactive_summaries=bool(kw.pop("proactive", False)))
    engine = ContextEngine(
        settings, "You are a coding agent. Be brief.", SCHEMAS, knowledge=knowledge,
        state_dir=kw.pop("state_dir", None),  # type: ignore[arg-type]
        summarize=kw.pop("summarize", None),  # type: ignore[arg-type]
        extras=Extras(counter=COUNTER, scope=FakeScope(), collapse=fake_collapse),
    )
    return engine, knowledge


def tool_turn(engine: ContextEngine, n: int, name: str, body: str,
              meta: dict[str, object] | None = None) -> None:
    """One assistant call and its result, then the batch gate."""
    args = {"path": f"src/f{n}.py"} if name == "read_file" else {"command": f"make t{n}"}
    call = ToolCall(id=f"c{n}", name=name, arguments=args)
    engine.add_assistant(Message(role="assistant", content=f"step {n}", tool_calls=(call,)))
    default = {"kind": "file", "path": args.get("path")} if name == "read_file" else {
        "kind": "command", "exit_code": 0}
    engine.add_tool_result(call, ToolResult(body, meta=meta or default),
                           read_only=name == "read_file")
    engine.after_tool_batch(n)


def code_text(lines: int, seed: int = 0) -> str:
    return "\n".join(f"def func_{seed}_{i}(x):  return x * {i} + {seed}  # line {i}"
                     for i in range(lines))
