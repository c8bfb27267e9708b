"""Tool calls small models write as text are recovered; broken argument JSON is repaired when
unambiguous, else reported precisely. Samples are shaped like real qwen2.5-coder / Qwen3-Coder
/ llama-3.2 output."""

from __future__ import annotations

from swival.messages import Message, ToolCall
from swival.providers.base import Completion
from swival.providers.repair import parse_arguments, repair_completion

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"file_path": {"type": "string"},
                                         "offset": {"type": "integer"},
                                         "limit": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "grep", "parameters": {
        "type": "object", "properties": {"pattern": {"type": "string"},
                                         "case_insensitive": {"type": "boolean"}}}}},
]


def repaired(text: str) -> Completion:
    return repair_completion(Completion(Message("assistant", text), None, "stop"), TOOLS)


def test_qwen25_coder_bare_json_object() -> None:
    out = repaired('{"name": "read_file", "arguments": {"file_path": "src/main.py"}}')
    (call,) = out.message.tool_calls
    assert (call.name, dict(call.arguments)) == ("read_file", {"file_path": "src/main.py"})
    assert out.message.content == "" and out.finish_reason == "tool_calls"
    assert "1 tool call written as text (read_file)" in out.notes


def test_hermes_tool_call_tags_with_prose_around() -> None:
    text = ("I'll look at the config first.\n<tool_call>\n{\"name\": \"read_file\", "
            "\"arguments\": {\"file_path\": \"setup.cfg\", \"limit\": 40}}\n</tool_call>")
    out = repaired(text)
    assert out.message.content == "I'll look at the config first."
    assert dict(out.message.tool_calls[0].arguments) == {"file_path": "setup.cfg", "limit": 40}


def test_fenced_json_block() -> None:
    text = ('Let me search.\n```json\n{"name": "grep", "arguments": {"pattern": "TODO", '
            '"case_insensitive": true}}\n```\n')
    out = repaired(text)
    assert out.message.tool_calls[0].name == "grep"
    assert out.message.tool_calls[0].arguments["case_insensitive"] is True
    assert "```" not in out.message.content


def test_qwen3_coder_function_tags_with_typed_parameters() -> None:
    text = ("<tool_call>\n<function=read_file>\n<parameter=file_path>\nsrc/app.py\n"
            "</parameter>\n<parameter=offset>\n120\n</parameter>\n</function>\n</tool_call>")
    out = repaired(text)
    (call,) = out.message.tool_calls
    assert dict(call.arguments) == {"file_path": "src/app.py", "offset": 120}
    assert out.message.content == ""


def test_two_calls_in_one_reply_keep_their_order() -> None:
    text = ('<tool_call>{"name": "grep", "arguments": {"pattern": "def main"}}</tool_call>\n'
            '<tool_call>{"name": "read_file", "arguments": {"file_path": "a.py"}}</tool_call>')
    out = repaired(text)
    assert [c.name for c in out.message.tool_calls] == ["grep", "read_file"]


def test_unknown_tool_name_is_left_as_text() -> None:
    text = 'An example payload: {"name": "deploy", "arguments": {"env": "prod"}}'
    out = repaired(text)
    assert out.message.tool_calls == () and out.message.content == text


def test_plain_json_answer_is_left_alone() -> None:
    text = 'The config is {"debug": true, "port": 8080}.'
    assert repaired(text).message.content == text


def test_native_tool_calls_are_untouched() -> None:
    native = Completion(Message("assistant", '{"name": "grep", "arguments": {}}',
                                tool_calls=(ToolCall("c1", "read_file", {"file_path": "x"}),)))
    assert repair_completion(native, TOOLS) is native


def test_broken_arguments_inside_text_call_are_repaired() -> None:
    text = "<tool_call>{'name': 'read_file', 'arguments': {'file_path': 'a.py',}}</tool_call>"
    out = repaired(text)
    (call,) = out.message.tool_calls
    assert dict(call.arguments) == {"file_path": "a.py"}


def test_trailing_comma() -> None:
    got = parse_arguments('{"file_path": "a.py", "limit": 10,}')
    assert got.value == {"file_path": "a.py", "limit": 10} and "trailing comma" in got.repairs


def test_single_quotes() -> None:
    got = parse_arguments("{'pattern': 'import os'}")
    assert got.value == {"pattern": "import os"} and got.error is None


def test_python_literals() -> None:
    got = parse_arguments('{"pattern": "x", "case_insensitive": True, "path": None}')
    assert got.value == {"pattern": "x", "case_insensitive": True, "path": None}


def test_python_literal_inside_a_string_is_kept() -> None:
    got = parse_arguments('{"content": "flag = True", "x": True}')
    assert got.value == {"content": "flag = True", "x": True}


def test_unclosed_braces_at_the_end() -> None:
    got = parse_arguments('{"file_path": "a.py", "opts": {"limit": 5')
    assert got.value == {"file_path": "a.py", "opts": {"limit": 5}}


def test_ambiguous_json_gives_a_precise_error() -> None:
    got = parse_arguments('{"content": "say "hi" now"}')
    assert got.value == {} and got.error is not None
    assert "not valid JSON" in got.error and "at character 19" in got.error


def test_unterminated_string_is_not_guessed() -> None:
    got = parse_arguments('{"content": "def f():\n    return 1')
    assert got.error is not None


def test_non_object_arguments_are_an_error() -> None:
    got = parse_arguments('["a.py"]')
    assert got.error is not None and "one JSON object" in got.error


def test_empty_arguments_mean_no_arguments() -> None:
    assert parse_arguments("").value == {} and parse_arguments(None).error is None
