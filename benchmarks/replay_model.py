"""A model that replays a recorded agent run, for benchmarks/replay.py.

`ReplayModel` implements the provider protocol (swival/providers/base.py), so the real
agent, tool registry and context engine run against it unchanged. Each request gets
the next recorded assistant message, its calls translated into Swival's tools so the
*real* tools produce the recorded output (`ScriptModel` simply answers with given
messages, for the scripted scenarios of benchmarks/scenarios.py):

    read_file    the recorded output is written at the file's path (the trajectory's
                 path hint, else outputs/<n>.txt), then read_file reads it
    run_command  `cat outputs/<n>.txt` carrying the original command in a here-document
                 (so the call costs what it cost), exiting 1 when the output holds an
                 error line
    grep         grep of every line of found/<n>.txt, which holds the recorded matches
    list_files   list_files of listed/<n>/, which holds one empty file per listed entry
    write_file,  write_file at the path hint (any old copy removed first, so the tool's
    edit_file    read-before-write rule holds) with the original command as content; an
                 edit whose recorded output holds an error (a patch that did not apply,
                 an edit the recorded agent refused) changed nothing: it is replayed as
                 the command above, so the model sees that output
    think        think with the recorded text

Requests without tools are the summarizer's recap calls: they get a deterministic recap
(the task line, paths mentioned and the last error of the text to recap). When a turn's
recorded messages run out while the agent still asks, the reply is a final answer.
Every request is kept in `requests` (with `recap=True` for recap calls).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from swival.context.errorlines import error_line
from swival.messages import Message, ToolCall, Usage
from swival.providers.base import ChatRequest, Completion, ProviderInfo, StreamItem, WindowInfo

END_OF_RUN = "(end of the recorded run)"
HEREDOC = "SWIVAL_REPLAY_EOF"
MAX_LISTED = 300
_PATH = re.compile(r"[\w./-]+\.(?:py|txt|cfg|toml|rst|md|json|yaml|yml|js|ts|go|rs|c|h)\b")


Recorded = tuple[dict[str, Any], dict[str, str]]  # (assistant message, call id -> output)


@dataclass(frozen=True)
class Seen:
    request: ChatRequest
    recap: bool


def safe_path(raw: object, fallback: str) -> str:
    """A relative path without `..`, from a recorded path hint (absolute or not)."""
    parts = [p for p in PurePosixPath(str(raw or "")).parts if p not in ("/", "..", ".")]
    return "/".join(parts) if parts else fallback


def stand_in_recap(messages: Sequence[Message]) -> str:
    """A deterministic recap: the task line, paths mentioned and the last error."""
    text = "\n".join(m.content for m in messages)
    paths = list(dict.fromkeys(_PATH.findall(text)))[-12:]
    task = next((ln for ln in text.splitlines() if ln.startswith("USER:")), "none")
    lines = [error_line(chunk) for chunk in text.split("TOOL RESULT")]
    errors = [line for line in lines if line]
    return "\n".join([
        "## Task", task[:300], "## Decisions", "none",
        "## Files and artifacts", *(f"- {p}" for p in paths),
        "## Constraints", "none", "## Pending", "none",
        "## Narrative", f"- {len(text)} characters recapped; last error: "
        + (errors[-1][:200] if errors else "none"),
    ])


@dataclass
class RecapAnswering:
    """The part both models share: `info`, every request kept, recap calls answered
    by `stand_in_recap`. Subclasses give `_next_message`."""

    window: int
    count: Callable[[ChatRequest], int]  # the prompt size a server would report
    requests: list[Seen] = field(default_factory=list)
    info: ProviderInfo = field(init=False)

    def __post_init__(self) -> None:
        self.info = ProviderInfo("replay", "replay://", "recorded-model",
                                 WindowInfo(self.window, "replay"))

    def stream(self, request: ChatRequest) -> Iterator[StreamItem]:
        recap = not request.tools
        self.requests.append(Seen(request, recap))
        if recap:
            message = Message("assistant", stand_in_recap(request.messages[1:]))
        else:
            message = self._next_message()
        # A recap's usage is of no use to the agent; counting it would only slow the
        # engine calls being timed.
        usage = None if recap else Usage(self.count(request), max(1, len(message.content) // 4))
        finish = "tool_calls" if message.tool_calls else "stop"
        yield Completion(message, usage, finish)

    def _next_message(self) -> Message:
        raise NotImplementedError


@dataclass
class ScriptModel(RecapAnswering):
    """Answers with `replies` in order (then a final answer)."""

    replies: list[Message] = field(default_factory=list)

    def _next_message(self) -> Message:
        return self.replies.pop(0) if self.replies else Message("assistant", END_OF_RUN)


@dataclass
class ReplayModel(RecapAnswering):
    """Replays recorded assistant messages (with the outputs of their calls, given per
    user request with `start`) into the workspace `root`."""

    root: Path = Path(".")
    _turns: list[Recorded] = field(default_factory=list)
    _next: int = 0
    _calls: int = 0

    def start(self, turns: list[Recorded]) -> None:
        """The recorded replies of the next user request, in order."""
        self._turns, self._next = turns, 0

    def _next_message(self) -> Message:
        if self._next >= len(self._turns):
            return Message("assistant", END_OF_RUN)
        raw, outputs = self._turns[self._next]
        self._next += 1
        calls = tuple(self._stage(call, outputs.get(call["id"], "")) for call in
                      raw.get("tool_calls") or ())
        return Message("assistant", raw.get("content") or "", tool_calls=calls)

    def _stage(self, call: dict[str, Any], output: str) -> ToolCall:
        """Write what the real tool needs to produce `output`; return the call."""
        self._calls += 1
        n, args, name = self._calls, call.get("arguments") or {}, call["name"]
        original = str(args.get("command") or json.dumps(args, ensure_ascii=False))
        if name == "read_file":
            path = self._write(safe_path(args.get("path"), f"outputs/{n}.txt"), output,
                               f"outputs/{n}.txt")
            return ToolCall(call["id"], "read_file", {"file_path": path})
        if name == "grep":
            self._write(f"found/{n}.txt", output or "(no matches)\n", "")
            return ToolCall(call["id"], "grep", {"pattern": "^", "path": f"found/{n}.txt"})
        if name == "list_files":
            folder = self.root / "listed" / str(n)
            folder.mkdir(parents=True, exist_ok=True)
            for line in [ln for ln in output.splitlines() if ln.strip()][:MAX_LISTED]:
                entry = re.sub(r"[^\w.-]+", "_", line.strip())[:80] or "_"
                (folder / entry).touch()
            return ToolCall(call["id"], "list_files", {"path": f"listed/{n}"})
        if name in ("write_file", "edit_file") and not error_line(output):
            path = safe_path(args.get("path"), f"edits/{n}.txt")
            target = self.root / path
            if target.is_file():
                target.unlink()
            if target.is_dir():
                path = f"edits/{n}.txt"
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            return ToolCall(call["id"], "write_file", {"file_path": path, "content": original})
        if name == "think":
            return ToolCall(call["id"], "think", {"thought": original})
        self._write(f"outputs/{n}.txt", output, "")
        status = "; exit 1" if error_line(output) else ""
        command = (f"cat outputs/{n}.txt <<'{HEREDOC}'{status}\n{original}\n{HEREDOC}")
        return ToolCall(call["id"], "run_command", {"command": command})

    def _write(self, path: str, text: str, fallback: str) -> str:
        target = self.root / path
        if target.is_dir() or any(p.is_file() for p in target.parents if self.root in p.parents):
            if not fallback:
                raise ValueError(f"cannot stage {path}")
            target, path = self.root / fallback, fallback
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return path
