"""Property-based robustness: nothing a model sends makes a tool, the transcript writer or
the screen renderer raise, hang, or produce text that cannot be sent on.

Hypothesis runs with `derandomize=True` (the same examples on every run, so the suite is
stable on a loaded two-core machine), `deadline=None` (speed is not the property; a real
hang is caught by the test timeout) and bounded `max_examples`, so the default run stays
fast. Every failure measured before these protections existed is pinned with `@example`.
"""

from __future__ import annotations

import io
import json
import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from swival.context.transcript import Transcript, replay
from swival.events import Notice, TextDelta, ToolFinished, ToolStarted, TurnFinished
from swival.messages import Message, ToolCall, ToolResult, Usage
from swival.providers.assembly import StreamAssembly
from swival.providers.base import Completion
from swival.providers.jsonfix import parse_arguments
from swival.providers.repair import repair_completion
from swival.providers.textgate import TextGate
from swival.render import ProgressPrinter, Status, TurnView
from swival.tools.base import ToolContext
from swival.tools.catalog import default_tools
from swival.tools.registry import ToolRegistry
from tests.evidence import record

SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SCHEMAS = {tool.spec.name: tool.spec.parameters for tool in default_tools()}
TOOL_SCHEMAS = ToolRegistry(default_tools()).schemas()
CATASTROPHIC_LINE = "a" * 40 + "b"

# Every code point, lone surrogates, NUL and control characters included.
any_text = st.text(st.characters(exclude_categories=()), max_size=30)
interesting = st.sampled_from([
    "a.txt", "sub", "sub/b.py", "fifo", "sock", "dangling", "out-link", "loop", "loop/x",
    "new/deep/c.txt", "~nosuchuser/x",
    "../outside.txt", "/etc/hostname", ".git/config", ".swival/x", "", " ", "~", "a\0b",
    "x\ud800y", "\udcff", "(a+)+$", "(a|aa)+$", "(?:a{1000}){1000}", "(?R)", "[", "*",
    "**/*", "{a,b}" * 12, "\x1b]0;title\x07", "a" * 3000, "line\nline\r\nline",
])
strings = st.one_of(interesting, any_text)
numbers = st.one_of(
    st.integers(min_value=-3, max_value=3000),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=6,
)
_BY_TYPE = {"string": st.one_of(interesting, interesting, any_text),
            "integer": st.integers(min_value=-3, max_value=3000), "number": numbers,
            "boolean": st.booleans(), "array": st.lists(strings, max_size=3),
            "object": st.dictionaries(strings, json_values, max_size=3)}


def _value(prop: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly the declared type (to get deep into the tool), sometimes anything."""
    typed = st.sampled_from(prop["enum"]) if "enum" in prop else _BY_TYPE.get(
        prop.get("type", ""), json_values)
    return st.one_of(typed, typed, typed, typed, json_values)


@st.composite
def tool_calls(draw: st.DrawFn) -> ToolCall:
    """Mostly a known tool with its required arguments, so calls get deep into the tools;
    sometimes an unknown name, a missing or extra argument, or a value of any type."""
    known = draw(st.integers(0, 9)) > 0
    name = draw(st.sampled_from(sorted(SCHEMAS))) if known else draw(any_text)
    schema: Mapping[str, Any] = SCHEMAS.get(name, {})
    required = set(schema.get("required", ())) if draw(st.integers(0, 9)) else set()
    args = {key: draw(_value(prop)) for key, prop in schema.get("properties", {}).items()
            if key in required or draw(st.booleans())}
    if not draw(st.integers(0, 9)):
        args[draw(any_text)] = draw(json_values)
    return ToolCall("call_1", name, args)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project with a regular file, a directory, a pipe, a socket, links in and out, a
    line that makes naive regexes backtrack, and a .gitignore."""
    base = tmp_path_factory.mktemp("prop")
    root = base / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\nbeta\n")
    (root / "sub" / "b.py").write_text("print('b')\n")
    (root / "slow.txt").write_text(CATASTROPHIC_LINE + "\n")
    (root / ".gitignore").write_text("*.log\n!keep.log\n[z-a]\n")
    (base / "outside.txt").write_text("outside\n")
    os.mkfifo(root / "fifo")
    os.symlink(base / "outside.txt", root / "out-link")
    os.symlink(root / "missing", root / "dangling")
    os.symlink("loop", root / "loop")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock"))
    yield root
    server.close()


def _context(root: Path) -> ToolContext:
    # Commands are refused: random text must never reach a shell.
    return ToolContext(root=root, approve=lambda _command: "refused by the property test",
                       command_timeout=5)


def assert_sendable(message: Message) -> None:
    """What an HTTP client does with a message: strict JSON, encoded as UTF-8."""
    json.dumps(message.to_dict(), ensure_ascii=False, allow_nan=False).encode("utf-8")


# Pieces of what small models write: text-written calls in every known style, JSON with
# the usual mistakes, and the deep nesting and huge numbers that once crashed the parser.
fragments = st.sampled_from([
    "<tool_call>", "</tool_call>", '{"name": "read_file", "arguments": {"file_path": "a.txt"}}',
    '{"name": "grep", "arguments": ', '{"name": "write_file", "parameters": {',
    "```json\n", "```", "\n", "<function=read_file>", "<function=nope>", "</function>",
    "<parameter=file_path>", "</parameter>", '"file_path": ', "'a.txt'", "True", "None",
    "NaN", "1e999", "1" + "0" * 5000, ",", ",}", "{", "}", "[", "]", '"', "\\", "\\ud800",
    "\ud800", "[" * 3000, "{\"a\":" * 200, "text ", "Let me look. ",
])
reply_text = st.lists(st.one_of(fragments, fragments, any_text), max_size=12).map("".join)


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


@SETTINGS
@given(raw=reply_text)
@example(raw="[" * 5000)
@example(raw='{"a": ' + "[" * 5000)
@example(raw='{"file_path": "a.txt", "offset": 1' + "0" * 5000 + "}")
@example(raw='{"file_path": "a.txt", "offset": NaN}')
@example(raw='{"content": "x\\ud800y"}')
def test_argument_text_always_parses_to_an_object_or_an_error(raw: str) -> None:
    record("malformed output", "random argument text", "in-process")
    for cut_off in (False, True):
        parsed = parse_arguments(raw, cut_off=cut_off)
        assert isinstance(parsed.value, dict)
        call = ToolCall("c", "read_file", parsed.value, parsed.error, parsed.repairs)
        assert_sendable(Message("assistant", "", tool_calls=(call,)))


@SETTINGS
@given(text=reply_text, cuts=st.lists(st.integers(0, 400), max_size=8),
       finish=st.sampled_from(["stop", "length", None]))
@example(text='<tool_call>{"name": "read_file", "arguments": {"a": ' + "[" * 3000,
         cuts=[20, 60], finish="stop")
@example(text='{"name": "read_file", "arguments": {"offset": 1' + "0" * 5000 + "}}",
         cuts=[5], finish="stop")
def test_streamed_replies_are_gated_and_repaired_without_raising(
        text: str, cuts: list[int], finish: str | None) -> None:
    """Random replies, cut into random chunks, through the text gate, the stream assembler
    (as text and as streamed tool-call arguments) and repair."""
    record("malformed output", "random streamed reply", "in-process")
    gate = TextGate(TOOL_SCHEMAS)
    shown = "".join(gate.feed(chunk) for chunk in _chunks(text, cuts))
    assembly = StreamAssembly()
    assembly.text(text)
    for chunk in _chunks(text, cuts):
        assembly.tool_delta(0, "call_1", "write_file", chunk)
    assembly.finish(finish)
    raw = assembly.completion()
    assert_sendable(raw.message)
    completion = repair_completion(Completion(Message("assistant", text), None, finish),
                                   TOOL_SCHEMAS)
    rest, final = gate.settle(completion)
    assert isinstance(shown + rest, str)
    for message in (final.message, repair_completion(raw, TOOL_SCHEMAS).message):
        assert all(isinstance(call, ToolCall) for call in message.tool_calls)
        assert_sendable(message)


@SETTINGS
@given(call=tool_calls())
@example(call=ToolCall("c", "write_file", {"file_path": "s.txt", "content": "x\ud800y"}))
@example(call=ToolCall("c", "read_file", {"file_path": "fifo"}))
@example(call=ToolCall("c", "grep", {"pattern": "x", "path": "fifo"}))
@example(call=ToolCall("c", "grep", {"pattern": "x"}))
@example(call=ToolCall("c", "write_file", {"file_path": "fifo", "content": "x"}))
@example(call=ToolCall("c", "edit_file", {"file_path": "sock", "old_string": "a",
                                          "new_string": "b"}))
@example(call=ToolCall("c", "list_files", {"pattern": "**/*"}))
@example(call=ToolCall("c", "grep", {"pattern": "(a+)+$", "path": "slow.txt"}))
@example(call=ToolCall("c", "grep", {"pattern": "(a|aa)+$", "path": "slow.txt"}))
@example(call=ToolCall("c", "list_files", {"pattern": "{a,b}" * 30}))
@example(call=ToolCall("c", "read_file", {"file_path": "a.txt", "offset": float("nan")}))
@example(call=ToolCall("c", "read_file", {"file_path": "a.txt", "limit": 10**30}))
def test_any_tool_call_becomes_a_result(workspace: Path, call: ToolCall) -> None:
    result = ToolRegistry(default_tools()).run(call, _context(workspace))
    record("malformed output", f"random {call.name!r} call", "in-process")
    assert isinstance(result, ToolResult)
    # The registry catches what a tool lets escape; the property is that no tool needs it.
    assert "failed unexpectedly" not in result.content, result.content
    assert_sendable(Message("assistant", "", tool_calls=(call,)))
    assert_sendable(Message("tool", result.content, tool_call_id=call.id, name=call.name))
    log = workspace.parent / "property.jsonl"
    log.unlink(missing_ok=True)  # a new transcript is never created over an existing file
    transcript = Transcript(log)
    transcript.message(Message("assistant", "", tool_calls=(call,)))
    transcript.message(Message("tool", result.content, tool_call_id=call.id), result.meta)
    transcript.close()


def test_the_pinned_failures_say_what_was_wrong(workspace: Path) -> None:
    """The @example cases above end as errors the model can act on (not just any result)."""
    registry, ctx = ToolRegistry(default_tools()), _context(workspace)

    def run(name: str, **args: Any) -> str:
        result = registry.run(ToolCall("c", name, args), ctx)
        assert result.is_error, result.content
        return result.content

    assert "lone surrogate" in run("write_file", file_path="s.txt", content="x\ud800y")
    assert not (workspace / "s.txt").exists()
    assert "named pipe (FIFO)" in run("read_file", file_path="fifo")
    assert "named pipe (FIFO)" in run("grep", pattern="x", path="fifo")
    assert "socket" in run("write_file", file_path="sock", content="x")
    assert "backtracks catastrophically" in run("grep", pattern="(a|aa)+$", path="slow.txt")
    assert "too large" in run("grep", pattern="(?:a{1000}){1000}")
    assert "invalid regex" in run("grep", pattern="(?R)")
    assert "alternatives" in run("list_files", pattern="{a,b}" * 30)
    assert "finite" in run("read_file", file_path="a.txt", offset=float("nan"))


@SETTINGS
@given(messages=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), any_text,
                                   st.lists(tool_calls(), max_size=2), json_values),
                         max_size=6))
@example(messages=[("assistant", "x\ud800", [ToolCall("c", "write_file",
                                                       {"content": "\udfff"})], None)])
def test_the_transcript_takes_any_message(tmp_path_factory: pytest.TempPathFactory,
                                           messages: list[tuple[str, str, list[ToolCall],
                                                                Any]]) -> None:
    path = tmp_path_factory.mktemp("transcript") / "t.jsonl"
    transcript = Transcript(path)
    for role, content, calls, meta in messages:
        calls = calls if role == "assistant" else []
        message = Message(role, content, tool_calls=tuple(calls),  # type: ignore[arg-type]
                          tool_call_id="c" if role == "tool" else None)
        assert_sendable(message)
        transcript.message(message, {"value": meta} if role == "tool" else None)
    transcript.close()
    if messages:
        for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
            json.loads(line)
        assert len(replay(path).history) == len(messages)


@SETTINGS
@given(texts=st.lists(strings, min_size=1, max_size=5), call=tool_calls())
@example(texts=["\x1b]52;c;ZXZpbA==\x07 \x1b[2J", "\ud800"],
         call=ToolCall("c", "read_file", {"file_path": "\x1b[31mred"}))
def test_the_screen_shows_any_text_safely(texts: list[str], call: ToolCall) -> None:
    """Model and file text reaches the terminal without control characters (a model must
    not be able to move the cursor or set the clipboard) and without encoding errors."""
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None, force_terminal=False)
    view = TurnView(console, Status("m", 8192, "test", 8192))
    printer = ProgressPrinter(console)
    result = ToolResult(texts[0], is_error=len(texts) % 2 == 0, meta={"diff": "\n".join(texts)})
    events = [*(TextDelta(t) for t in texts), ToolStarted(call),
              ToolFinished(call, result, 0.5), Notice(texts[-1], "warning"),
              TurnFinished("".join(texts), "done", 1, 1, Usage())]
    view.start_turn()
    for event in events:
        view.handle(event)
        printer.handle(event)
    view.close()
    shown = out.getvalue()
    shown.encode("utf-8")
    assert "\x1b" not in shown and "\x07" not in shown
