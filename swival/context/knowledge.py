"""Knowledge that lives outside the message history: think steps, the todo list,
snapshot summaries and proactive checkpoint summaries.

Compaction may remove any message; it cannot touch this. The engine renders
`pinned_sections()` into the pinned block every time it rewrites history, delivers
`tail_notes()` (todo reminder, read-only nudge) at the end of the newest message, and
routes ThinkEffect/TodoEffect here through `apply()`. Every store is bounded so the
pinned block stays a small share of an 8K window.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from swival.effects import ThinkEffect, TodoEffect
from swival.messages import ToolResult

DIGEST_CHARS = 1500  # the think digest in the pinned block
STEP_CHARS = 400  # one step inside the digest
MAX_STEPS = 100  # steps held in memory; the oldest go first
MAX_TODOS = 50
TODO_CHARS = 300
OPEN_TODOS_CHARS = 1200  # open items in the pinned block and in reminders
REMIND_AFTER = 3  # turns without a look at the list before a reminder
NUDGE_AFTER = 5  # consecutive read-only turns before the snapshot nudge
SUMMARY_CHARS = 3000  # one snapshot summary
SUMMARIES_CHARS = 4500  # all snapshot summaries together (~1,100 tokens)
CHECKPOINT_CHARS = 4000  # one checkpoint summary (~1,000 tokens)
CHECKPOINT_TOKENS = 2000  # consolidate the store above this
PINNED_CHECKPOINT_CHARS = 2000
TODO_FILE = "todo.md"
_TODO_LINE = re.compile(r"^\s*[-*]\s*\[([ xX])\]\s*(?:#?(\d+)[.):]?\s+)?(.*\S)\s*$")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, limit: int) -> str:
    """`text` itself when short enough, else its head and a note of what was cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 40].rstrip() + f" [... {len(text) - limit + 40} chars cut]"


@dataclass
class Step:
    number: int
    text: str
    branch: str | None = None
    revised: bool = False


class ThinkLog:
    """Numbered reasoning steps; a revision replaces the step's text in place."""

    def __init__(self) -> None:
        self.steps: dict[int, Step] = {}

    def add(self, effect: ThinkEffect) -> ToolResult:
        if effect.revises is not None:
            old = self.steps.get(effect.revises)
            if old is None:
                known = ", ".join(map(str, sorted(self.steps))) or "none yet"
                return ToolResult(f"error: there is no step {effect.revises} to revise "
                                  f"(steps: {known}).", is_error=True)
            old.text, old.revised = effect.thought, True
            old.branch = effect.branch or old.branch
            return ToolResult(f"Step {old.number} revised.")
        number = effect.thought_number or max(self.steps, default=0) + 1
        existed = number in self.steps
        self.steps[number] = Step(number, effect.thought, effect.branch, revised=existed)
        while len(self.steps) > MAX_STEPS:
            del self.steps[min(self.steps)]
        on_branch = f" on branch '{effect.branch}'" if effect.branch else ""
        verb = "replaced" if existed else "noted"
        return ToolResult(f"Step {number} {verb}{on_branch}.")

    def digest(self) -> str:
        """The newest steps, revisions applied, within DIGEST_CHARS."""
        lines: list[str] = []
        used = 0
        numbers = sorted(self.steps, reverse=True)
        for number in numbers:
            step = self.steps[number]
            tags = "".join((f" [{step.branch}]" if step.branch else "",
                            " (revised)" if step.revised else ""))
            line = f"{number}.{tags} {_cut(_one_line(step.text), STEP_CHARS)}"
            if lines and used + len(line) + 1 > DIGEST_CHARS:
                break
            lines.append(line)
            used += len(line) + 1
        omitted = len(numbers) - len(lines)
        if omitted:
            lines.append(f"({omitted} earlier step{'s' if omitted > 1 else ''} omitted)")
        return "\n".join(reversed(lines))


@dataclass
class Item:
    id: int
    text: str
    done: bool = False


class TodoList:
    """Items with stable small ids, mirrored to `<state_dir>/todo.md` when there is one."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.items: list[Item] = []

    def open_items(self) -> list[Item]:
        return [i for i in self.items if not i.done]

    def apply(self, effect: TodoEffect) -> ToolResult:
        action = effect.action
        if action == "list":
            return ToolResult(self.render_all())
        if action == "add":
            result = self._add(_one_line(effect.text or ""))
        elif action in ("done", "remove"):
            result = self._change(action, effect.id)
        elif action == "clear":
            count, self.items = len(self.items), []
            result = ToolResult(f"Cleared {count} item{'s' * (count != 1)}.")
        else:
            return ToolResult(f"error: unknown todo action `{action}`; use add, done, remove, "
                              "list or clear.", is_error=True)
        if result.is_error:
            return result
        problem = self.save()
        return ToolResult(result.content + (f" ({problem})" if problem else ""))

    def _add(self, text: str) -> ToolResult:
        if not text:
            return ToolResult("error: todo add needs `text`.", is_error=True)
        text = _cut(text, TODO_CHARS)
        for item in self.open_items():
            if item.text == text:
                return ToolResult(f"Already on the list as #{item.id}.")
        if len(self.items) >= MAX_TODOS:
            finished = [i for i in self.items if i.done]
            if not finished:
                return ToolResult(f"error: the list is full ({MAX_TODOS} open items); mark "
                                  "items done or remove some first.", is_error=True)
            self.items.remove(finished[0])
        item = Item(max((i.id for i in self.items), default=0) + 1, text)
        self.items.append(item)
        return ToolResult(f"Added #{item.id}. {self._open_count()}")

    def _change(self, action: str, item_id: int | None) -> ToolResult:
        item = next((i for i in self.items if i.id == item_id), None)
        if item is None:
            ids = ", ".join(f"#{i.id}" for i in self.items) or "none"
            return ToolResult(f"error: there is no todo #{item_id} (items: {ids}).",
                              is_error=True)
        if action == "remove":
            self.items.remove(item)
            return ToolResult(f"Removed #{item.id}. {self._open_count()}")
        if item.done:
            return ToolResult(f"#{item.id} was already done. {self._open_count()}")
        item.done = True
        following = self.open_items()
        hint = f" Next: #{following[0].id} {following[0].text}" if following else ""
        return ToolResult(f"Done #{item.id}. {self._open_count()}{hint}")

    def _open_count(self) -> str:
        count = len(self.open_items())
        return f"{count} open." if count else "Nothing open."

    def render_all(self) -> str:
        if not self.items:
            return "The todo list is empty."
        return "\n".join(f"- [{'x' if i.done else ' '}] #{i.id} {i.text}" for i in self.items)

    def render_open(self) -> str:
        """Open items, one a line, bounded by OPEN_TODOS_CHARS ('' when none)."""
        lines: list[str] = []
        open_items = self.open_items()
        for n, item in enumerate(open_items):
            line = f"- [ ] #{item.id} {item.text}"
            if lines and sum(len(x) + 1 for x in lines) + len(line) > OPEN_TODOS_CHARS:
                lines.append(f"- ... and {len(open_items) - n} more (todo list shows all)")
                break
            lines.append(line)
        return "\n".join(lines)

    def save(self) -> str | None:
        """Write todo.md atomically (temp file + os.replace); a problem text on failure
        (the list stays in memory either way)."""
        if self.path is None:
            return None
        body = "# Todo\n\n" + "".join(
            f"- [{'x' if i.done else ' '}] {i.id}. {i.text}\n" for i in self.items)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".todo-", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(body)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            return f"could not write {self.path}: {exc.strerror or exc}; kept in memory"
        return None

    def load(self) -> None:
        """Replace the items by those in todo.md (none when it is missing). Lines that
        are not items are ignored; items without a number get a fresh id."""
        self.items = []
        if self.path is None or not self.path.is_file():
            return
        pending: list[tuple[bool, str]] = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _TODO_LINE.match(line)
            if not match:
                continue
            done, number, text = match.group(1) != " ", match.group(2), match.group(3)
            taken = {i.id for i in self.items}
            if number and int(number) not in taken:
                self.items.append(Item(int(number), _cut(text, TODO_CHARS), done))
            else:
                pending.append((done, _cut(text, TODO_CHARS)))
        for done, text in pending:
            self.items.append(Item(max((i.id for i in self.items), default=0) + 1, text, done))
        del self.items[MAX_TODOS:]


@dataclass
class Summary:
    label: str | None
    text: str
    turn: int


class Knowledge:
    """Think steps, todos, snapshot summaries and checkpoints for one session, plus the
    timing of the todo reminder and the read-only nudge. `state_dir` (<root>/.swival)
    holds todo.md; None keeps everything in memory."""

    def __init__(self, state_dir: Path | None) -> None:
        self._todo_path = state_dir / TODO_FILE if state_dir else None
        self._fresh()

    def _fresh(self) -> None:
        self.think = ThinkLog()
        self.todo_list = TodoList(self._todo_path)
        self.summaries: list[Summary] = []
        self.checkpoints: list[tuple[int, str]] = []
        self._last_look: int | None = None  # last turn the model saw the todo list
        self._read_streak = 0
        self._nudged = False

    def apply(self, effect: ThinkEffect | TodoEffect, turn: int) -> ToolResult:
        """Carry out a think or todo call; the result is the text the model reads.
        Any todo action counts as looking at the list."""
        if isinstance(effect, ThinkEffect):
            return self.think.add(effect)
        self._last_look = turn
        return self.todo_list.apply(effect)

    def todos(self) -> list[tuple[int, str, bool]]:
        """(id, text, done) for every item, for /todo; this is not the model looking."""
        return [(i.id, i.text, i.done) for i in self.todo_list.items]

    def pinned_sections(self) -> list[str]:
        """Markdown sections for the pinned block, only the non-empty ones."""
        sections = []
        if self.think.steps:
            sections.append("## Your reasoning so far\n" + self.think.digest())
        if self.todo_list.open_items():
            sections.append("## Open todos\n" + self.todo_list.render_open())
        if self.summaries:
            body = "\n\n".join(
                f"**{s.label or 'summary'}** (turn {s.turn}): {s.text}" for s in self.summaries)
            sections.append("## Snapshot summaries\n" + body)
        text = self.checkpoint_text()
        if text:
            if len(text) > PINNED_CHECKPOINT_CHARS:  # the newest part matters most
                text = "[... older part cut]\n" + text[-PINNED_CHECKPOINT_CHARS:]
            sections.append("## Earlier checkpoints\n" + text)
        return sections

    def observe_batch(self, turn: int, calls: int, all_read_only: bool) -> None:
        """Count consecutive read-only batches (of `calls` calls); a batch with a call
        that is not read-only breaks the streak and re-arms the nudge."""
        if not calls:
            return
        if all_read_only:
            self._read_streak += 1
        else:
            self._read_streak = 0
            self._nudged = False

    def tail_notes(self, turn: int) -> list[str]:
        """Notes due now; each is returned once and then counts as delivered."""
        notes = []
        open_items = self.todo_list.open_items()
        if open_items:
            if self._last_look is None:
                self._last_look = turn  # a list reloaded from disk: start counting now
            elif turn - self._last_look >= REMIND_AFTER:
                self._last_look = turn
                notes.append(f"[Reminder: {len(open_items)} open todo item"
                             f"{'s' * (len(open_items) != 1)}; mark finished ones with todo "
                             f"done]\n" + self.todo_list.render_open())
        if self._read_streak >= NUDGE_AFTER and not self._nudged:
            self._nudged = True
            notes.append(
                f"[Note: the last {self._read_streak} steps only read or searched. If you "
                "have what you need, call snapshot with action=restore and a summary of "
                "your findings (files, facts, next steps) to free context.]"
            )
        return notes

    def add_snapshot_summary(self, label: str | None, summary: str, turn: int) -> str:
        """Store a restored snapshot's summary (capped at SUMMARY_CHARS; the oldest
        summaries go when all together pass SUMMARIES_CHARS) and return the stored text.
        A restore ends the read-only streak it collapsed."""
        text = _cut(summary.strip(), SUMMARY_CHARS)
        self.summaries.append(Summary(label, text, turn))
        while len(self.summaries) > 1 and sum(len(s.text) for s in self.summaries) > \
                SUMMARIES_CHARS:
            self.summaries.pop(0)
        self._read_streak = 0
        self._nudged = False
        return text

    def add_checkpoint(self, text: str, turn: int) -> None:
        """Keep a proactive summary (capped at CHECKPOINT_CHARS); blank ones are ignored."""
        if text.strip():
            self.checkpoints.append((turn, _cut(text.strip(), CHECKPOINT_CHARS)))

    def checkpoint_text(self) -> str | None:
        """All checkpoint summaries, oldest first, or None when there are none."""
        if not self.checkpoints:
            return None
        return "\n\n".join(f"[up to turn {turn}] {text}" for turn, text in self.checkpoints)

    def needs_consolidation(self) -> list[str] | None:
        """The oldest half of the checkpoints (at least two) when the store is over
        CHECKPOINT_TOKENS (estimated at 4 characters a token), else None."""
        total = sum(len(text) for _, text in self.checkpoints) // 4
        if total <= CHECKPOINT_TOKENS or len(self.checkpoints) < 2:
            return None
        count = max(2, len(self.checkpoints) // 2)
        return [text for _, text in self.checkpoints[:count]]

    def replace_oldest(self, merged: str, count: int) -> None:
        """Replace the `count` oldest checkpoints by their merged summary."""
        if not 1 <= count <= len(self.checkpoints):
            raise ValueError(f"count must be between 1 and {len(self.checkpoints)}, got {count}")
        turn = self.checkpoints[count - 1][0]
        self.checkpoints[:count] = [(turn, _cut(merged.strip(), CHECKPOINT_CHARS))]

    def clear(self) -> None:
        """/clear: forget everything and delete todo.md."""
        self._fresh()
        if self._todo_path is not None:
            # An undeletable file only matters on a later resume; /clear must not fail.
            with contextlib.suppress(OSError):
                self._todo_path.unlink(missing_ok=True)

    def reload(self) -> None:
        """Session resume: read the todo list back from todo.md."""
        self.todo_list.load()
        self._last_look = None
