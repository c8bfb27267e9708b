"""Work the engine hands to a thread so that no turn waits for it: the proactive
checkpoint summaries (and the merging of old ones).

`Checkpoints` decides when: with proactive_summaries on, every PROACTIVE_EVERY model
calls (counted over the session, so one long request gets checkpoints too) the
messages since the last checkpoint are summarized; finished summaries are stored in
Knowledge and reported as `Checkpointed` events the next time the engine runs; when
the store grows past its bound, its oldest half is merged the same way.

`submit` starts a job when none is running (False otherwise: the caller tries again
later); `collect` returns the jobs finished since, for the engine to store; `reset`
(on /clear) forgets what is in flight, so its answer is dropped. The thread is a
daemon: a summary still being written never keeps Swival from exiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from swival.context.knowledge import Knowledge
from swival.events import Checkpointed
from swival.messages import Message

PROACTIVE_EVERY = 10  # model calls between proactive checkpoints
Recap = Callable[[Sequence[Message]], "str | None"]


@dataclass(frozen=True)
class Done:
    kind: str  # "checkpoint" or "merge"
    text: str | None  # None when the summarizer failed
    size: int  # messages summarized (checkpoint) or checkpoints merged (merge)


class Background:
    def __init__(self, recap: Recap) -> None:
        self._recap = recap
        self._lock = threading.Condition()
        self._running = False
        self._generation = 0
        self._done: list[Done] = []

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._running

    def submit(self, kind: str, messages: Sequence[Message], size: int) -> bool:
        with self._lock:
            if self._running:
                return False
            self._running = True
            generation = self._generation
        worker = threading.Thread(target=self._run, args=(kind, tuple(messages), size,
                                                          generation),
                                  name=f"swival-{kind}", daemon=True)
        worker.start()
        return True

    def _run(self, kind: str, messages: tuple[Message, ...], size: int,
             generation: int) -> None:
        try:
            text = self._recap(messages)
        except Exception:  # a failed summary is only a missing checkpoint
            text = None
        with self._lock:
            self._running = False
            if generation == self._generation:
                self._done.append(Done(kind, text, size))
            self._lock.notify_all()

    def collect(self) -> list[Done]:
        with self._lock:
            done, self._done = self._done, []
        return done

    def reset(self) -> None:
        with self._lock:
            self._generation += 1
            self._done = []

    def wait(self, timeout: float) -> bool:
        """Block until no job runs (tests use it); False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._running, timeout)


class Checkpoints:
    """When to summarize, and storing what the background wrote (module docstring)."""

    def __init__(self, background: Background, knowledge: Knowledge,
                 count: Callable[[str], int]) -> None:
        self.background, self.knowledge, self.count = background, knowledge, count
        self.reset()

    def reset(self) -> None:
        """/clear (or a resumed session): nothing summarized, nothing in flight."""
        self.background.reset()
        self._last_turn, self._seen = 0, 0

    def rewritten(self, messages: int) -> None:
        """History was rewritten: what is there now counts as seen."""
        self._seen = messages

    def step(self, turn: int, history: Sequence[Message]) -> list[Checkpointed]:
        events = []
        for done in self.background.collect():
            if done.text and done.kind == "checkpoint":
                self.knowledge.add_checkpoint(done.text, turn)
                events.append(Checkpointed(turn, done.size, self.count(done.text)))
            elif done.text:
                self.knowledge.replace_oldest(done.text, done.size)
        oldest = self.knowledge.needs_consolidation()
        if oldest and self.background.submit(
                "merge", [Message("user", text) for text in oldest], len(oldest)):
            return events
        fresh = history[self._seen:]
        if turn - self._last_turn >= PROACTIVE_EVERY and fresh and self.background.submit(
                "checkpoint", fresh, len(fresh)):
            self._last_turn, self._seen = turn, len(history)
        return events
