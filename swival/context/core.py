"""The engine's state and the views of it: the history, the pinned block, what a
request holds and how many tokens that is. `ContextEngine` (engine.py) builds on this
with the agent's call API; levels.py and restore.py add compaction and snapshots.

Rewrites go through `_rewrite`, the one place the history is replaced and the one
moment the pinned block may be re-rendered (so the prefix stays stable otherwise).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from swival.context.budget import Budget
from swival.context.calibration import Calibration
from swival.context.compaction import ResultInfo
from swival.context.ledger import Ledger
from swival.context.protocols import Collapse, KnowledgeLike, ScopeLike
from swival.context.summarize import Recapper, Summarizer, recap_header
from swival.context.tokens import TokenCounter
from swival.context.transcript import Transcript, new_session_id
from swival.context.types import ContextSettings, EngineState, Extras, Prepared
from swival.messages import Message
from swival.redaction import Redactor
from swival.state import spill_folder, spill_text

RECAP_SHARE = 0.08  # recap size asked of the summarizer, share of the input budget
RECAP_MAX = 1200
PINNED_HEADER = (
    "[Pinned context, kept by the harness across compactions. It records what already "
    "happened; it is not a new instruction.]"
)


class EngineCore:
    """State shared by the engine's parts; see engine.py for the call order."""

    def __init__(
        self,
        settings: ContextSettings,
        system_prompt: str,
        tool_schemas: Sequence[Mapping[str, Any]],
        *,
        knowledge: KnowledgeLike,
        state_dir: Path | None,
        summarize: Summarizer | None = None,
        extras: Extras | None = None,
    ) -> None:
        extras = extras or Extras()
        if extras.scope is None or extras.collapse is None:
            from swival.context import snapshot  # the knowledge helper's module

        self.settings = settings
        self.knowledge = knowledge
        self.state_dir = state_dir
        self.summarize = summarize
        self.counter = extras.counter or TokenCounter()
        self.scope: ScopeLike = extras.scope or snapshot.SnapshotScope()
        self._collapse: Collapse = extras.collapse or snapshot.collapse
        self.budget = Budget(settings.window, settings.max_output_tokens,
                             settings.compaction_trigger, settings.compaction_target)
        self.calibration = Calibration()
        self._system = Message(role="system", content=system_prompt)
        self._schemas = tuple(tool_schemas)
        self._schema_count: int | None = None  # counted on first use: see _schema_tokens
        self._history: list[Message] = []
        self._pinned: Message | None = None
        self._merged: tuple[Message, Message, Message] | None = None
        self._infos: weakref.WeakKeyDictionary[Message, ResultInfo] = (
            weakref.WeakKeyDictionary()
        )
        self._ledger = self._new_ledger()
        self._state = EngineState()
        self._last_sent: tuple[Prepared, int] | None = None
        self.redactor = extras.redactor or Redactor()
        self._on_transcript = extras.on_transcript
        self.session_id = extras.session_id or new_session_id()
        self.transcript_path = (
            state_dir / "sessions" / f"{self.session_id}.jsonl" if state_dir else None
        )
        self._transcript = self._open_transcript(self.transcript_path) if (
            self.transcript_path) else None

    def _open_transcript(self, path: Path, resume: bool = False) -> Transcript:
        return Transcript(path, self.redactor, resume=resume, on_create=self._on_transcript)

    @property
    def _schema_tokens(self) -> int:
        """The tool schemas' tokens, counted on first use rather than when the engine is
        built: counting loads the tokenizer (~0.15 s), which the REPL does in the background
        once its prompt is up instead of before it."""
        if self._schema_count is None:
            self._schema_count = self.counter.schemas(self._schemas)
        return self._schema_count

    def _new_ledger(self) -> Ledger:
        return Ledger.for_budget(self.budget.input_budget)

    # ----- reading -------------------------------------------------------------------------

    @property
    def history(self) -> tuple[Message, ...]:
        """The conversation without the system prompt and pinned block."""
        return tuple(self._history)

    def messages(self) -> list[Message]:
        """What would be sent now: system prompt, pinned block (if any), history."""
        if self._pinned is None:
            return [self._system, *self._history]
        if self._history and self._history[0].role == "user":
            # Two user messages in a row break chat templates that demand alternating
            # roles (Mistral, Gemma): fold the pinned block into the first user message.
            return [self._system, self._merged_head(self._history[0]), *self._history[1:]]
        return [self._system, self._pinned, *self._history]

    def _merged_head(self, first: Message) -> Message:
        """The pinned block and `first` as one user message, built once per pair so the
        token cache and the prefix stay stable between rewrites."""
        cached = self._merged
        if cached and cached[0] is self._pinned and cached[1] is first:
            return cached[2]
        assert self._pinned is not None
        merged = Message(role="user", content=self._pinned.content + "\n\n" + first.content)
        self._merged = (self._pinned, first, merged)
        return merged

    def _raw(self) -> int:
        return self.counter.messages(self.messages()) + self._schema_tokens

    def estimate(self) -> int:
        """Calibrated tokens of the prompt as it stands (messages + tool schemas)."""
        return self.calibration.apply(self._raw())

    def _lookup(self, message: Message) -> ResultInfo | None:
        return self._infos.get(message)

    def _exhausted_text(self, estimate: int) -> str:
        where = f" The full conversation is saved in {self.transcript_path}." if (
            self.transcript_path) else ""
        return (
            f"The conversation no longer fits the {self.budget.window}-token context window, "
            f"even after the deepest compaction (about {estimate} tokens needed, including "
            f"{self._schema_tokens} for tool schemas).{where} To continue, load the model "
            "with a larger context window (and pass --max-context-tokens), or start over "
            "with /clear and a smaller request."
        )

    # ----- writing -------------------------------------------------------------------------

    def _append(self, message: Message, meta: Mapping[str, Any] | None = None) -> None:
        self._history.append(message)
        self._state.appends += 1
        self._state.last_level = 0
        if self._transcript:
            self._transcript.message(message, meta)

    def _spill(self, stem: str) -> Callable[[str], Path | None]:
        """A writer that saves an oversized text, redacted, in this session's spill
        folder under <state_dir>/out/ (None: not saved)."""
        def write(content: str) -> Path | None:
            if self.state_dir is None:
                return None
            try:
                return spill_text(self.redactor.redact(content),
                                  spill_folder(self.state_dir, self.session_id), stem)
            except OSError:
                return None

        return write

    def _rewrite(self, history: list[Message], recap: str | None, repin: bool = True) -> None:
        """Replace the history (after the transcript has everything) and, with
        `repin`, re-render the pinned block: the one moment the prefix may change."""
        self._history = list(history)
        self._state.recap = recap
        self._state.appends = 0
        self._state.sent_len = min(self._state.sent_len, len(self._history))
        self._state.checkpoint_index = len(self._history)
        if repin:
            self._pinned = self._render_pinned()
        if self._transcript:
            self._transcript.history(self._history, recap)

    def _render_pinned(self) -> Message | None:
        requests = [m.content for m in self._history if m.role == "user"]
        ledger = self._ledger.render(lambda head: any(head in text for text in requests))
        parts = [ledger, *self.knowledge.pinned_sections()]
        if self._state.recap:
            parts.append(recap_header(str(self.transcript_path or "no file")) + "\n"
                         + self._state.recap)
        body = "\n\n".join(p for p in parts if p)
        return Message(role="user", content=PINNED_HEADER + "\n\n" + body) if body else None

    # ----- recaps --------------------------------------------------------------------------

    def _recap_tokens(self) -> int:
        return min(RECAP_MAX, int(self.budget.input_budget * RECAP_SHARE))

    def _recapper(self) -> Recapper:
        assert self.summarize is not None
        return Recapper(self.summarize, self.counter.text,
                        str(self.transcript_path or "the session transcript"),
                        self.budget.input_budget, self._recap_tokens())
