"""A reasoning block written into the reply text: `<think>...</think>` at its start.

Thinking models (Qwen3, DeepSeek-R1 and their distills, QwQ) reason before they answer. Most
servers send that reasoning apart (`reasoning_content`, Ollama's `thinking`), but LM Studio
with "separate reasoning_content" off, llama-server with `--reasoning-format none`, older
Ollama releases and many hosted routes put it at the start of the text as
`<think>...</think>`. That block is not the answer: it must not be shown as one, kept in
the conversation, or searched for tool calls written as text.

`ThinkStrip` is fed the reply's text pieces in order and returns what is answer. Only a block
at the very start of the reply counts (after whitespace): a reply that starts otherwise
passes through untouched, `<think>` in the middle of prose included. While the start could
still become `<think>` (a first piece "<th"), it is held; `flush()` returns whatever is
still held when the reply ends. Whitespace right after `</think>` is dropped, as the
models' chat templates do. A block never closed is all reasoning.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


class ThinkStrip:
    """See the module docstring. `thought` counts the reasoning characters removed."""

    def __init__(self) -> None:
        self._state = "start"  # "start" (undecided), "inside" the block, "after" it, "plain"
        self._held = ""
        self.thought = 0

    def feed(self, piece: str) -> str:
        """The answer text in `piece` (possibly held text from earlier pieces with it)."""
        if self._state == "plain" or not piece:
            return piece
        text = self._held + piece
        self._held = ""
        if self._state == "start":
            head = text.lstrip()
            if not head or (len(head) < len(OPEN) and OPEN.startswith(head)):
                self._held = text
                return ""
            if not head.startswith(OPEN):
                self._state = "plain"
                return text
            self._state, text = "inside", head[len(OPEN) :]
        if self._state == "inside":
            end = text.find(CLOSE)
            if end < 0:
                keep = _partial_suffix(text, CLOSE)
                self._held = text[len(text) - keep :] if keep else ""
                self.thought += len(text) - keep
                return ""
            self.thought += end
            self._state, text = "after", text[end + len(CLOSE) :]
        text = text.lstrip()  # state "after": the answer starts at its first non-space
        if text:
            self._state = "plain"
        return text

    def flush(self) -> str:
        """The reply ended: what was held that is answer (an unfinished start such as
        "<th" is; the unclosed block's tail is not)."""
        held, self._held = self._held, ""
        return held if self._state == "start" else ""


def _partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of `text` that is a proper start of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
