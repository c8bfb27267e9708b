"""Server doubles that count prompts the way real local servers do.

tests/fakeserver.py estimates every prompt at 4 characters a token and reports that.
`CountingServer` (a FakeServer: same scripts, same wire formats) instead renders each
request the way a chat template does (one block per message, the tool schemas in a
block of their own), counts it with cl100k_base times `scale` (a server whose
tokenizer counts 15 % more than ours is `scale=1.15`), and keeps the previous prompt
as its KV cache: the leading blocks identical to the previous request's are cached.

    counts="total"          prompt_tokens is the whole prompt (llama.cpp, LM Studio,
                            Ollama's /v1 and newer native API), no cached figure
    counts="total+cached"   the same plus the cached figure (`prompt_tokens_details.
                            cached_tokens`, Ollama's `prompt_eval_cached_count`)
    counts="uncached"       only the tokens evaluated, cache hits left out and no
                            cached figure (older Ollama native releases)

With `truncate=True` a prompt over the window is cut silently, the way Ollama cuts
it: system blocks and the tool block stay, then the newest messages that fit (the
last one always); whatever is older is dropped. Ollama's native API takes the window
from `options.num_ctx`, everything else from `window`. Without `truncate`, llama.cpp,
LM Studio and "openai" kinds answer their 400 overflow as FakeServer does.

`seen` records one `Seen` per chat request, so a test can assert that no prompt was
cut and that `marker` (say, the user's task) reached the model every time. Requests
without tools are the summarizer's recap calls: they are answered with `recap`,
counted in `recaps`, and leave the script and the cache alone (a server with more
than one slot, or a prompt cache in RAM, keeps the conversation's cache).

The llama.cpp kind also answers `POST /apply-template` (the rendered prompt) and
`POST /tokenize` (one token id per token of `content`), the way llama-server does, and
counts those calls in `hits`.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from swival.context.tokens import load_encoder
from tests.fakeserver import FakeServer, Reply

START = "<|im_start|>"


def _encoder() -> Callable[[str], int]:
    return load_encoder() or (lambda text: max(1, len(text) // 4))


@dataclass(frozen=True)
class Seen:
    """What the server did with one chat request."""

    total: int  # tokens of the whole prompt as sent
    kept: int  # tokens the model saw (== total unless truncated)
    cached: int  # tokens of the kept prompt found in the cache
    truncated: bool
    marker_kept: bool | None  # whether `marker` survived (None: no marker set)


def render_blocks(body: dict[str, Any]) -> tuple[str, list[str]]:
    """(the tool block, one block per message), as a ChatML-style template renders
    them: every block starts with START, so counting blocks one by one adds up to
    counting the whole prompt."""
    tools = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in body.get("tools") or ())
    tool_block = f"{START}system\n# Tools\n<tools>\n{tools}</tools><|im_end|>\n" if tools else ""
    blocks = []
    for message in body.get("messages") or ():
        calls = message.get("tool_calls") or ()
        text = message.get("content") or ""
        text += "".join(f"\n<tool_call>{json.dumps(c, ensure_ascii=False)}</tool_call>"
                        for c in calls)
        blocks.append(f"{START}{message.get('role')}\n{text}<|im_end|>\n")
    return tool_block, blocks


@dataclass
class CountingServer(FakeServer):
    scale: float = 1.0
    counts: str = "total"
    truncate: bool = False
    marker: str | None = None
    recap: str = "## Task\nthe task (a recap written by the server double)"
    seen: list[Seen] = field(default_factory=list)
    recaps: int = 0
    _previous: list[str] = field(default_factory=list)
    _count: Callable[[str], int] = field(default_factory=_encoder)
    _measure_lock: threading.Lock = field(default_factory=threading.Lock)

    # -- counting --------------------------------------------------------------------------
    def tokens(self, text: str) -> int:
        """This server's tokenizer: cl100k_base scaled, block by block."""
        pieces = [p for p in text.split(START) if p]
        return sum(math.ceil(self._count(START + p) * self.scale) for p in pieces)

    def count_prompt(self, body: dict[str, Any]) -> int:
        tool_block, blocks = render_blocks(body)
        return self.tokens(tool_block) + sum(self.tokens(b) for b in blocks)

    def _window_for(self, body: dict[str, Any]) -> int:
        if self.kind == "ollama" and "options" in body:
            return int((body.get("options") or {}).get("num_ctx") or 2048)
        return self.window

    def _keep(self, body: dict[str, Any], window: int) -> tuple[list[str], int, bool]:
        """The blocks the model sees, their tokens, and whether any were dropped."""
        tool_block, blocks = render_blocks(body)
        system = {i for i, m in enumerate(body.get("messages") or ()) if m.get("role") == "system"}
        sizes = [self.tokens(b) for b in blocks]
        used = self.tokens(tool_block) + sum(sizes[i] for i in system)
        total = used + sum(s for i, s in enumerate(sizes) if i not in system)
        if not self.truncate or total <= window:
            return [tool_block, *blocks], total, False
        keep = set(system)
        for i in range(len(blocks) - 1, -1, -1):
            if i in system:
                continue
            if used + sizes[i] > window and i != len(blocks) - 1:
                break
            keep.add(i)
            used += sizes[i]
        return [tool_block, *(blocks[i] for i in sorted(keep))], min(used, window), True

    def _measure(self, body: dict[str, Any]) -> Seen:
        total = self.count_prompt(body)
        blocks, kept, truncated = self._keep(body, self._window_for(body))
        cached = 0
        for old, new in zip(self._previous, blocks, strict=False):
            if old != new:
                break
            cached += self.tokens(new)
        self._previous = blocks
        marker = None if self.marker is None else any(self.marker in b for b in blocks)
        return Seen(total, kept, min(cached, kept), truncated, marker)

    # -- the reply's figures ---------------------------------------------------------------
    def next_reply(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):  # the summarizer's tool-free call: answered off-script
            with self._measure_lock:
                self.requests.append(body)
                self.recaps += 1
            return Reply(text=self.recap, usage=(self.count_prompt(body), 40))
        with self._measure_lock:
            seen = self._measure(body)
            self.seen.append(seen)
        reply = super().next_reply(body)
        completion = reply.usage[1] if reply.usage else max(1, len(reply.text) // 4)
        prompt = seen.kept - seen.cached if self.counts == "uncached" else seen.kept
        cached = seen.cached if self.counts == "total+cached" else None
        return replace(reply, usage=(max(1, prompt), completion), cached=cached)

    def overflow_body(self, prompt: int, window: int | None = None) -> tuple[int, Any] | None:
        return None if self.truncate else super().overflow_body(prompt, window)

    # -- llama.cpp's template and tokenizer endpoints --------------------------------------
    def discovery(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any] | None:
        if self.kind == "llamacpp" and method == "POST" and path == "/apply-template":
            tool_block, blocks = render_blocks(body)
            return 200, {"prompt": tool_block + "".join(blocks)}
        if self.kind == "llamacpp" and method == "POST" and path == "/tokenize":
            return 200, {"tokens": [7] * self.tokens(str(body.get("content") or ""))}
        return super().discovery(method, path, body)

    @property
    def truncations(self) -> int:
        return sum(1 for s in self.seen if s.truncated)

    @property
    def without_marker(self) -> int:
        return sum(1 for s in self.seen if s.marker_kept is False)
