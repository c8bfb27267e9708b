"""Subagent benchmark: what delegating an exploration costs the parent, and what a
one-slot server's prompt cache costs when a child's requests take the slot.

The scripted 25-call investigation of benchmarks/scenarios.py runs through the real
session (build_session: the system prompt, tools, context engine and task tool), twice
per window: inline (the parent makes the 25 calls itself) and delegated (the parent
calls task; a subagent makes the same 25 calls and reports the same answer). Then the
user asks a follow-up, which the parent answers at once. Every request the session
sends, recap calls included, goes through a model of the server's prompt cache:

    a slot holds the last prompt it computed (tool schemas first, then the messages)
    and the reply it generated; a request reuses the longest run of elements equal to a
    slot's, and the rest is prefill. With one slot (llama.cpp's default, LM Studio,
    Ollama with one parallel request) every request goes to it; with more (llama.cpp
    --parallel N) a request takes the slot sharing the most with it, else the one used
    least recently.

Tokens are the context engine's counter (tiktoken cl100k_base).

    python benchmarks/subagent_prefill.py                # print the table
    python benchmarks/subagent_prefill.py --write-docs   # also update the "Subagents"
                                                         # section of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.scenarios import INVESTIGATE, workspace  # noqa: E402
from benchmarks.startup import write_docs  # noqa: E402
from swival.config import load_settings  # noqa: E402
from swival.context.tokens import TokenCounter  # noqa: E402
from swival.messages import Message  # noqa: E402
from swival.providers.base import ChatRequest, Completion, StreamItem  # noqa: E402
from swival.session import build_session  # noqa: E402
from swival.tools.task import Task  # noqa: E402
from tests.scripted import ScriptedProvider, call, reply  # noqa: E402

SECTION = "## Subagents"
WINDOWS = (8192, 16_384, 32_768)
SLOTS = (1, 2, 3)
FOLLOW_UP = "Which function should change? One line."
FOLLOW_UP_ANSWER = "apply_discount() in shop/pricing.py."
RECAP = "Recap: the investigation read the shop modules; the rounding differs in pricing."


@dataclass
class Slot:
    """One cache slot: the elements it holds (canonical text, tokens) and when used."""

    elements: list[tuple[str, int]] = field(default_factory=list)
    used: int = 0


class Cache:
    """The server's prompt cache, `slots` slots (see the module docstring)."""

    def __init__(self, slots: int) -> None:
        self.slots = [Slot() for _ in range(slots)]
        self.clock = 0
        self.last: Slot | None = None

    def request(self, elements: list[tuple[str, int]]) -> int:
        """Send a prompt; its prefill in tokens."""
        self.clock += 1
        shared = {id(s): _common(s.elements, elements) for s in self.slots}
        slot = max(self.slots, key=lambda s: (shared[id(s)], -s.used))
        common = shared[id(slot)]
        slot.elements, slot.used, self.last = list(elements), self.clock, slot
        return sum(tokens for _, tokens in elements[common:])

    def reply(self, element: tuple[str, int]) -> None:
        """The reply the last request generated stays in its slot."""
        if self.last is not None:
            self.last.elements.append(element)


def _common(cached: Sequence[tuple[str, int]], wanted: Sequence[tuple[str, int]]) -> int:
    count = 0
    for old, new in zip(cached, wanted, strict=False):
        if old[0] != new[0]:
            break
        count += 1
    return count


@dataclass
class Sent:
    """One request as the benchmark saw it."""

    who: str  # "parent", "child" or "recap"
    elements: list[tuple[str, int]]
    reply: tuple[str, int]


class Recorder:
    """A Provider around the scripted model that keeps every request with its reply."""

    def __init__(self, inner: ScriptedProvider, counter: TokenCounter) -> None:
        self.inner, self.counter, self.info = inner, counter, inner.info
        self.sent: list[Sent] = []

    def stream(self, request: ChatRequest) -> Iterator[StreamItem]:
        for item in self.inner.stream(request):
            if isinstance(item, Completion):
                self.sent.append(Sent(_who(request), self._elements(request),
                                      self._element(item.message)))
            yield item

    def _elements(self, request: ChatRequest) -> list[tuple[str, int]]:
        tools = json.dumps(request.tools or [], sort_keys=True)
        return [(tools, self.counter.schemas(request.tools or [])),
                *(self._element(m) for m in request.messages)]

    def _element(self, message: Message) -> tuple[str, int]:
        return json.dumps(message.to_dict(), sort_keys=True), self.counter.message(message)


def _who(request: ChatRequest) -> str:
    names = [t["function"]["name"] for t in request.tools or []]
    return "recap" if not names else "parent" if "task" in names else "child"


def _router(parent: list[Any], child: list[Any]) -> list[Any]:
    """Script items answering the parent, the child and recap calls from their queues."""
    queues = {"parent": list(parent), "child": list(child)}

    def answer(request: ChatRequest) -> Any:
        who = _who(request)
        return reply(RECAP) if who == "recap" else queues[who].pop(0)

    return [answer] * 400


def _steps() -> list[Any]:
    return [call(step.tool, say=step.say, **step.args) for step in INVESTIGATE.steps]


def run(window: int, delegate: bool, counter: TokenCounter) -> list[Sent]:
    """One scripted session in a fresh generated project: the requests it sent."""
    if delegate:
        parent = [call("task", description="find the rounding bug", prompt=INVESTIGATE.task),
                  reply(INVESTIGATE.answer), reply(FOLLOW_UP_ANSWER)]
        child = [*_steps(), reply(INVESTIGATE.answer)]
    else:
        parent, child = [*_steps(), reply(INVESTIGATE.answer), reply(FOLLOW_UP_ANSWER)], []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace(root)
        model = Recorder(ScriptedProvider(_router(parent, child), window=window), counter)
        session = build_session(load_settings({}, cwd=root), model,
                                interactive=False)
        for text in (INVESTIGATE.task, FOLLOW_UP):
            for _ in session.agent.run_turn(text):
                pass
        session.close()
    return model.sent


@dataclass
class Figures:
    counts: str
    carried: int  # tokens of the parent's follow-up request
    after: tuple[int, ...]  # prefill of the parent's request after the exploration, per SLOTS
    total: tuple[int, ...]  # prefill of every request, per SLOTS


def measure(sent: list[Sent]) -> Figures:
    """Replay `sent` through caches of each size in SLOTS."""
    prefills: list[list[int]] = []
    for slots in SLOTS:
        cache, per = Cache(slots), []
        for request in sent:
            per.append(cache.request(request.elements))
            cache.reply(request.reply)
        prefills.append(per)
    parents = [i for i, r in enumerate(sent) if r.who == "parent"]
    after = parents[-2]  # the parent's request that reads the exploration's result
    who = [r.who for r in sent]
    counts = f"{who.count('parent')} / {who.count('child')} / {who.count('recap')}"
    return Figures(counts, sum(t for _, t in sent[parents[-1]].elements),
                   tuple(per[after] for per in prefills), tuple(sum(per) for per in prefills))


HEADERS = ("window", "exploration", "requests: parent / subagent / recap",
           "parent's prompt at the follow-up", "parent's prefill after the exploration, "
           "1 / 2 / 3 slots", "prefill of all requests, 1 / 2 / 3 slots")


def _figures(values: Sequence[int]) -> str:
    return " / ".join(f"{v:,}" for v in values)


def rows() -> tuple[list[tuple[str, ...]], str]:
    """The table, and a sentence on the tool schemas the parent and a subagent send."""
    counter = TokenCounter()
    out: list[tuple[str, ...]] = []
    schemas = ""
    for window in WINDOWS:
        for delegate in (False, True):
            sent = run(window, delegate, counter)
            f = measure(sent)
            out.append((f"{window // 1024}K", "subagent (task)" if delegate else "inline",
                        f.counts, f"{f.carried:,}", _figures(f.after), _figures(f.total)))
            if delegate and not schemas:
                first = {r.who: r.elements[0][1] for r in reversed(sent)}
                task = counter.schemas([Task().spec.schema()])
                schemas = (f"Tool schemas sent with every request: the parent's {first['parent']:,}"
                           f" tokens (the `task` tool's {task} of them), a subagent's "
                           f"{first['child']:,} (the read-only tools).")
    return out, schemas


def markdown(table: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|---|---|---|---:|---:|---:|"]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in table)])


def section(table: list[tuple[str, ...]], schemas: str) -> str:
    return (
        f"{SECTION}\n\n"
        "Measured by `python benchmarks/subagent_prefill.py --write-docs` (Python "
        f"{sys.version.split()[0]}). The scripted 25-call investigation "
        "(`benchmarks/scenarios.py`) runs through the real session twice per window: inline, "
        "and delegated to a subagent with `task`; then the user asks a follow-up. Every "
        "request, recap calls included, goes through a model of the server's prompt cache: a "
        "slot keeps the last prompt it computed and its reply, a request reuses the longest "
        "run of equal elements (tool schemas first, then messages), the rest is prefill. "
        "One slot is llama.cpp's default, LM Studio and Ollama with one parallel request; "
        "two and three are `llama-server --parallel 2` and `3` (a request takes the slot "
        "sharing the most with it, else the one used least recently). Tokens are the "
        "context engine's counter; session ids (the time and a random part) are named in "
        "the prompts, so figures move by a few tokens a request from run to run.\n\n"
        + markdown(table) + "\n\n" + schemas + "\n\n"
        "What the columns mean. *Parent's prompt at the follow-up* is what the parent carries "
        "on with: inline, the exploration stays in its context (compacted where the window "
        "forced it); delegated, only the answer does. *Parent's prefill after the "
        "exploration* is the request that reads the result: inline it only adds the last "
        "tool result; delegated, on one slot the child's requests took the slot (with other "
        "tool schemas, so nothing is shared) and the parent's whole prompt is computed "
        "again; with a slot of its own the parent's prompt stays cached. When a subagent "
        "compacts (the recap column), its recap calls (no tools: they share nothing either) "
        "take the slot used least recently, the parent's, so only a third slot keeps it. "
        "*Prefill of all requests* is mostly the exploration, paid either way (delegated, in "
        "the child's context).\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:  # the session index and config stay here
        os.environ["XDG_STATE_HOME"] = str(Path(home) / "state")
        os.environ["XDG_CONFIG_HOME"] = str(Path(home) / "config")
        table, schemas = rows()
    print(markdown(table))
    print(schemas)
    if args.write_docs:
        print(f"wrote {write_docs(section(table, schemas), SECTION)}")


if __name__ == "__main__":
    main()
