"""Tool calls written as text never reach the screen: StreamingProvider holds back what could be
one (textgate.py) until repair has decided, streams prose live, and the text it yields always
adds up to the final content. Samples are shaped like real qwen2.5-coder, Hermes, Qwen3-Coder
and ordinary markdown replies; they run through a scripted `_attempt` and over the wire."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

import pytest

from swival.config import Settings
from swival.errors import TransientProviderError
from swival.messages import Message, ToolCall, Usage
from swival.providers.base import (
    ChatRequest,
    Completion,
    Provider,
    ProviderInfo,
    Restart,
    StreamItem,
    TextChunk,
    WindowInfo,
)
from swival.providers.factory import connect
from swival.providers.streaming import RetryPolicy, StreamingProvider, Transient
from swival.providers.textgate import TextGate
from tests.fakeserver import FakeServer, text, tools

FAST = RetryPolicy(retries=2, backoff=0.001)
TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"file_path": {"type": "string"},
                                         "offset": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "grep", "parameters": {
        "type": "object", "properties": {"pattern": {"type": "string"}}}}},
]
READ_JSON = '{"name": "read_file", "arguments": {"file_path": "src/main.py"}}'

# (reply text as the model streams it, final content after repair, names of recovered calls)
SAMPLES: dict[str, tuple[str, str, list[str]]] = {
    "qwen25_bare_json": (READ_JSON, "", ["read_file"]),
    "qwen25_prose_then_json": ("I will read the entry point first.\n" + READ_JSON,
                               "I will read the entry point first.", ["read_file"]),
    "hermes_tags": ("I'll look at the config first.\n<tool_call>\n{\"name\": \"read_file\", "
                    "\"arguments\": {\"file_path\": \"setup.cfg\"}}\n</tool_call>",
                    "I'll look at the config first.", ["read_file"]),
    "qwen3_coder_function": ("Let me open it.\n\n<tool_call>\n<function=read_file>\n"
                             "<parameter=file_path>\nsrc/app.py\n</parameter>\n"
                             "<parameter=offset>\n120\n</parameter>\n</function>\n</tool_call>",
                             "Let me open it.", ["read_file"]),
    "fenced_json_call": ("Let me search.\n```json\n{\"name\": \"grep\", \"arguments\": "
                         "{\"pattern\": \"TODO\"}}\n```\n", "Let me search.", ["grep"]),
    "prose_call_prose": ("First the tests.\n<tool_call>{\"name\": \"grep\", \"arguments\": "
                         "{\"pattern\": \"def test_\"}}</tool_call>\nThen I will fix them.",
                         "First the tests.\n\nThen I will fix them.", ["grep"]),
    "leading_blank_lines": ("\n\nSure, reading it.\n" + READ_JSON, "Sure, reading it.",
                            ["read_file"]),
    "markdown_python": ("Here is the fix:\n\n```python\ndef load(path):\n    cache = {}\n"
                        "    opts = {\"mode\": \"r\"}\n    return open(path, **opts)\n```\n\n"
                        "The `cache` dict stays empty until the first call.", "", []),
    "inline_braces": ("Use an empty dict `{}` as the default: `def f(x=None): x = x or {}`.",
                      "", []),
    "json_answer": ('The config is {"debug": true, "port": 8080}. Set "port" to 9000.', "", []),
    "json_fence_answer": ("Your package.json:\n```json\n{\"name\": \"web\", \"private\": true}\n"
                          "```\nRun `npm install` next.", "", []),
    "unknown_tool_example": ('An example payload: {"name": "deploy", "arguments": '
                             '{"env": "prod"}} is what the CI sends.', "", []),
    "broken_json_in_prose": ('The key {"a" 1} is not valid JSON, fix the colon.', "", []),
    "unknown_tool_in_tags": ("The model would send <tool_call>{\"name\": \"deploy\", "
                             "\"arguments\": {}}</tool_call> here.", "", []),
    "tool_word_not_a_tag": ("Call <tools> and <function=unknown_fn> with care.", "", []),
}


def expected_content(name: str) -> str:
    reply, content, calls = SAMPLES[name]
    return content if calls else reply


class ScriptedProvider(StreamingProvider):
    """Each attempt streams its chunks, then either completes or drops the connection.
    `log` records every chunk sent and every item received, in order."""

    def __init__(self, *attempts: tuple[list[str], bool]) -> None:
        info = ProviderInfo("llamacpp", "http://127.0.0.1:9", "m", WindowInfo(32768, "test"))
        super().__init__(info, FAST)
        self.attempts = list(attempts)
        self.log: list[tuple[str, str]] = []
        self.calls = 0

    def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
        self.calls += 1
        chunks, drops = self.attempts.pop(0)
        for chunk in chunks:
            self.log.append(("sent", chunk))
            yield TextChunk(chunk)
        if drops:
            raise Transient("connection reset by peer")
        yield Completion(Message("assistant", "".join(chunks)), Usage(100, 20), "stop")


def ask() -> ChatRequest:
    return ChatRequest([Message("user", "fix the bug")], tools=TOOLS)


def run(provider: Provider, request: ChatRequest | None = None) -> tuple[list[str], Completion]:
    shown: list[str] = []
    for item in provider.stream(request or ask()):
        if isinstance(item, TextChunk):
            shown.append(item.text)
            log = getattr(provider, "log", None)
            if log is not None:
                log.append(("got", item.text))
        elif isinstance(item, Restart):
            shown.clear()
        else:
            return shown, item
    raise AssertionError("no completion")


def split(reply: str, size: int) -> list[str]:
    return [reply[i:i + size] for i in range(0, len(reply), size)]


def random_split(reply: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(reply)), min(len(reply) - 1, len(reply) // 3)))
    return [reply[a:b] for a, b in zip([0, *cuts], [*cuts, len(reply)], strict=True)]


def received_before_end(provider: ScriptedProvider) -> str:
    """The text the caller had received when the last chunk was sent."""
    last_sent = max(i for i, (kind, _) in enumerate(provider.log) if kind == "sent")
    return "".join(t for kind, t in provider.log[:last_sent] if kind == "got")


# -- the invariant ------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_shown_text_adds_up_to_the_final_content(name: str) -> None:
    reply, _, calls = SAMPLES[name]
    splits = [split(reply, n) for n in (1, 2, 3, 5, 8, 64)]
    splits += [random_split(reply, seed) for seed in range(4)]
    for chunks in splits:
        shown, done = run(ScriptedProvider((chunks, False)))
        assert done.message.content == expected_content(name), chunks
        assert "".join(shown) == done.message.content, chunks
        assert [c.name for c in done.message.tool_calls] == calls
        if calls:
            joined = "".join(shown)
            assert "<tool_call>" not in joined and '"name"' not in joined
            assert "<function=" not in joined and "```" not in joined


# -- what streams live --------------------------------------------------------------------

@pytest.mark.parametrize(("name", "live"), [
    ("hermes_tags", "I'll look at the config first."),
    ("qwen3_coder_function", "Let me open it."),
    ("qwen25_prose_then_json", "I will read the entry point first."),
    ("fenced_json_call", "Let me search."),
    ("leading_blank_lines", "Sure, reading it."),
    ("prose_call_prose", "First the tests."),
])
def test_prose_before_a_call_streams_live(name: str, live: str) -> None:
    provider = ScriptedProvider((split(SAMPLES[name][0], 4), False))
    run(provider)
    assert received_before_end(provider) == live


@pytest.mark.parametrize("name", ["markdown_python", "inline_braces", "json_answer",
                                  "json_fence_answer", "tool_word_not_a_tag"])
def test_ordinary_answers_stream_live_apart_from_the_last_chunk(name: str) -> None:
    reply = SAMPLES[name][0]
    chunks = split(reply, 4)
    provider = ScriptedProvider((chunks, False))
    run(provider)
    assert received_before_end(provider) == "".join(chunks[:-1]).rstrip()


def test_broken_json_in_prose_is_held_but_shown_at_the_end() -> None:
    reply = SAMPLES["broken_json_in_prose"][0]
    provider = ScriptedProvider((split(reply, 4), False))
    shown, done = run(provider)
    assert received_before_end(provider) == "The key"
    assert "".join(shown) == reply == done.message.content


def test_a_continuation_keeps_its_leading_whitespace() -> None:
    """A reply continuing one the output limit cut is joined to it as written: " are
    read." must not become "are read." (the answer would read "The partsare read.")."""
    continued = ChatRequest([Message("user", "go on")], tools=TOOLS, continues=True)
    provider = ScriptedProvider((split(" are read.", 3), False))
    shown, done = run(provider, continued)
    assert "".join(shown) == done.message.content == " are read."
    fresh = ScriptedProvider((split(" are read.", 3), False))
    shown, done = run(fresh)  # a reply's own leading whitespace is still left out
    assert "".join(shown) == done.message.content == "are read."
    call = ScriptedProvider((split(" so I read it.\n" + READ_JSON, 5), False))
    shown, done = run(call, continued)  # repair strips around a call it recovers
    assert done.message.content == "so I read it." and "".join(shown).strip() == "so I read it."
    assert done.message.tool_calls[0].name == "read_file"


def test_a_marker_split_across_chunks_is_held() -> None:
    gate = TextGate(TOOLS)
    assert gate.feed("Checking.") == "Checking."
    assert gate.feed(" <tool") == ""
    assert gate.feed("_call>") == ""
    assert gate.feed('{"name": "grep", "arguments": {"pattern": "x"}}</tool_call>') == ""
    other = TextGate(TOOLS)
    assert other.feed("Use <tool") == "Use"
    assert other.feed("s> here.") == " <tools> here."
    fence = TextGate(TOOLS)
    assert fence.feed("Done.\n``") == "Done."
    assert fence.feed("`python\nx = 1\n") == "\n```python\nx = 1"


def test_a_json_object_is_released_once_it_is_complete_and_not_a_call() -> None:
    gate = TextGate(TOOLS)
    assert gate.feed('Set {"port": 80') == "Set"
    assert gate.feed('80} now') == ' {"port": 8080} now'
    assert gate.feed(' and {"name": "grep", "arguments": {}} then') == " and"
    assert gate.feed(" more") == ""  # after a real call everything waits for repair


def test_without_tools_everything_passes_untouched() -> None:
    reply = "\n" + READ_JSON
    provider = ScriptedProvider((split(reply, 3), False))
    shown, done = run(provider, ChatRequest([Message("user", "hi")]))
    assert "".join(shown) == reply == done.message.content and not done.message.tool_calls


def test_native_tool_calls_with_held_text_still_show_it() -> None:
    class Native(ScriptedProvider):
        def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
            yield TextChunk("Reading {\"file\": 1")
            call = ToolCall("c1", "read_file", {"file_path": "a.py"})
            yield Completion(Message("assistant", 'Reading {"file": 1', tool_calls=(call,)))

    shown, done = run(Native())
    assert "".join(shown) == done.message.content == 'Reading {"file": 1'
    assert done.message.tool_calls[0].name == "read_file"


# -- retries ------------------------------------------------------------------------------

def test_held_text_does_not_prevent_a_retry() -> None:
    provider = ScriptedProvider((['{"name": "read_', 'file", "argu'], True),
                                (split(READ_JSON, 5), False))
    shown, done = run(provider)
    assert provider.calls == 2 and shown == []
    assert done.message.tool_calls[0].arguments == {"file_path": "src/main.py"}


def test_prose_held_before_a_drop_is_not_repeated_after_the_retry() -> None:
    provider = ScriptedProvider(([" \n"], True), (["Hello", " there."], False))
    shown, done = run(provider)
    assert provider.calls == 2 and "".join(shown) == "Hello there." == done.message.content


def test_shown_text_is_superseded_and_the_reply_asked_for_again() -> None:
    provider = ScriptedProvider((["I'll read it.\n", "<tool_call>"], True),
                                (split(READ_JSON, 5), False))
    items = list(provider.stream(ask()))
    assert provider.calls == 2
    assert [type(i) for i in items] == [TextChunk, Restart, Completion]
    assert items[0] == TextChunk("I'll read it.") and "cut" in items[1].reason  # type: ignore[union-attr]
    assert items[2].message.tool_calls[0].arguments == {"file_path": "src/main.py"}  # type: ignore[union-attr]


def test_a_reply_that_keeps_dropping_ends_in_a_clear_error() -> None:
    provider = ScriptedProvider(*[(["I'll read it.\n"], True)] * 3)
    with pytest.raises(TransientProviderError, match="kept failing after 3 attempts"):
        run(provider)
    assert provider.calls == 3


# -- over the wire ------------------------------------------------------------------------

Make = Callable[..., FakeServer]


def wire(server: FakeServer) -> Provider:
    return connect(Settings(provider=server.kind, base_url=server.url), FAST)


def test_hermes_call_over_the_wire_is_never_shown(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(text('<tool_call>{"name": "read_file", "arguments": {"file_path": "a.py"}}'
                       "</tool_call>", chunk=3))
    shown, done = run(wire(server))
    assert shown == [] and done.message.content == ""
    assert done.message.tool_calls[0].arguments == {"file_path": "a.py"}


@pytest.mark.parametrize("kind", ["llamacpp", "ollama"])
@pytest.mark.parametrize("name", ["qwen3_coder_function", "qwen25_prose_then_json",
                                  "markdown_python", "json_answer"])
def test_samples_over_the_wire(fake_server: Make, kind: str, name: str) -> None:
    server = fake_server(kind=kind)
    server.script(text(SAMPLES[name][0], chunk=3))
    shown, done = run(wire(server))
    assert done.message.content == expected_content(name)
    assert "".join(shown) == done.message.content
    assert [c.name for c in done.message.tool_calls] == SAMPLES[name][2]


def test_native_call_with_prose_over_the_wire(fake_server: Make) -> None:
    server = fake_server(kind="llamacpp")
    server.script(tools([("grep", {"pattern": "TODO"})], content="Searching {\"x\": 1} now."))
    shown, done = run(wire(server))
    assert "".join(shown) == done.message.content == 'Searching {"x": 1} now.'
    assert done.message.tool_calls[0].name == "grep"


# -- long replies -------------------------------------------------------------------------

LONG = 300_000
BIG_CALL = '{"name": "read_file", "arguments": {"file_path": "' + "x" * LONG + '"}}'
BIG_OBJECT = '{"code": "' + "f() { g(); }\\n" * (LONG // 14) + '"}'


@pytest.mark.parametrize(("reply", "shown_by_the_end"), [
    ("word " * (LONG // 5), "word " * (LONG // 5 - 1) + "word"),
    (f"Writing it. {BIG_CALL}", "Writing it."),
    (f"Writing it.\n```json\n{BIG_CALL}\n```", "Writing it."),
    # an object that holds no call is released while the reply goes on
    (f"Here is the code: {BIG_OBJECT}" + " and more" * 5000,
     f"Here is the code: {BIG_OBJECT}" + " and more" * 5000),
], ids=["prose", "json-call", "fenced-call", "object-with-braces"])
def test_a_long_reply_costs_time_in_proportion_to_its_length(reply: str,
                                                              shown_by_the_end: str) -> None:
    """A small model looping until its output limit, or writing a big file as a text call,
    streams hundreds of thousands of characters in tiny chunks. Scanning the whole reply
    again for every chunk took minutes (quadratic); each chunk must cost about its size."""
    gate = TextGate(TOOLS)
    started = time.perf_counter()
    shown = "".join(gate.feed(reply[i:i + 4]) for i in range(0, len(reply), 4))
    elapsed = time.perf_counter() - started
    assert shown == shown_by_the_end, (len(shown), shown[-60:])
    assert elapsed < 5, f"{elapsed:.1f} s to feed {len(reply):,} characters"
