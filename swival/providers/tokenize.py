"""Exact prompt counts from a llama.cpp server.

`llama-server` renders the chat template it really applies (`POST /apply-template`, the
same body as a chat request, tools included) and tokenizes with the model's own
tokenizer (`POST /tokenize`). Together they give the prompt's exact size in the
server's tokens, before the prompt is sent — what the context engine needs to budget
exactly instead of estimating with cl100k_base. Two loopback calls of a few
milliseconds each, so the engine asks only before its first request and when its
estimate nears the compaction trigger.

A server without these endpoints (older builds, or not llama.cpp) answers 404 once;
the counter then stays quiet for the rest of the session. Any failure is None: the
engine keeps its own estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from swival.providers.http import ProbeError, fetch_json

TIMEOUT = 5.0


class ExactCounter:
    """Counts a chat request (its wire body) with the server's template and tokenizer."""

    def __init__(self, root: str, api_key: str | None = None) -> None:
        self.root = root.rstrip("/")
        self.api_key = api_key
        self.available = True

    def count(self, body: Mapping[str, Any]) -> int | None:
        if not self.available:
            return None
        template = {k: body[k] for k in ("messages", "tools") if body.get(k)}
        try:
            rendered = fetch_json(self.root + "/apply-template", body=template,
                                  api_key=self.api_key, timeout=TIMEOUT)
            prompt = rendered["prompt"] if isinstance(rendered, Mapping) else None
            if not isinstance(prompt, str):
                raise ProbeError(self.root, 200, "no prompt in the reply")
            tokens = fetch_json(self.root + "/tokenize",
                                body={"content": prompt, "add_special": True},
                                api_key=self.api_key, timeout=TIMEOUT)
            found = tokens.get("tokens") if isinstance(tokens, Mapping) else None
            if not isinstance(found, Sequence):
                raise ProbeError(self.root, 200, "no tokens in the reply")
            return len(found)
        except ProbeError as exc:
            if exc.status is not None and exc.status != 503:  # 503: the model is loading
                self.available = False
            return None
        except (KeyError, TypeError):
            self.available = False
            return None
