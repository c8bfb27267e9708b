from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.registry import ToolRegistry, check_arguments, decoded


class Echo:
    """A test tool implementing the Tool protocol."""

    spec = ToolSpec(
        "echo",
        "Echo text.",
        {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "times": {"type": "integer"},
                "mode": {"type": "string", "enum": ["loud", "quiet"]},
            },
            "required": ["text"],
        },
    )
    read_only = True

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if args["text"] == "fail":
            raise ToolError("asked to fail")
        if args["text"] == "crash":
            raise RuntimeError("boom")
        return ToolResult(args["text"] * int(args.get("times") or 1))


def _run(reg: ToolRegistry, name: str, args: dict[str, Any], tmp_path: Path) -> ToolResult:
    return reg.run(ToolCall("c1", name, args), ToolContext(root=tmp_path))


def test_runs_a_valid_call(tmp_path: Path) -> None:
    assert _run(ToolRegistry([Echo()]), "echo", {"text": "ab", "times": 2}, tmp_path).content \
        == "abab"


def test_unknown_tool_suggests_the_closest(tmp_path: Path) -> None:
    result = _run(ToolRegistry([Echo()]), "ecko", {"text": "x"}, tmp_path)
    assert result.is_error
    assert "no tool named `ecko`" in result.content and "Did you mean `echo`" in result.content


def test_argument_problems_are_precise() -> None:
    schema = Echo.spec.parameters
    assert check_arguments(schema, {}) == "missing required argument: text"
    assert "unknown argument: txt" in (check_arguments(schema, {"text": "a", "txt": 1}) or "")
    assert "unknown arguments: txt, tx" in (check_arguments(
        schema, {"text": "a", "txt": 1, "tx": 2}) or "")
    assert "must be of type integer" in (check_arguments(schema, {"text": "a", "times": "2x"})
                                         or "")
    assert "must be of type integer" in (check_arguments(schema, {"text": "a", "times": True})
                                         or "")
    assert "must be one of loud, quiet" in (check_arguments(schema, {"text": "a", "mode": "x"})
                                            or "")
    assert check_arguments(schema, {"text": "a", "times": None}) is None


def test_an_object_or_array_sent_as_a_string_of_json_is_decoded() -> None:
    schema = {"type": "object", "properties": {"options": {"type": "object"},
                                               "items": {"type": "array"},
                                               "text": {"type": "string"}}}
    sent = {"options": '{"a": 1}', "items": "[1, 2]", "text": '{"a": 1}'}
    assert decoded(schema, sent) == {"options": {"a": 1}, "items": [1, 2], "text": '{"a": 1}'}
    for wrong in ({"options": "[1]"}, {"options": "a=1"}, {"items": '{"a": 1}'}):
        assert decoded(schema, wrong) == wrong  # left for check_arguments to report
        assert "must be of type" in (check_arguments(schema, decoded(schema, wrong)) or "")


@pytest.mark.parametrize(("declared", "sent", "taken"), [
    ("integer", "10", 10), ("integer", " -3 ", -3), ("integer", "10.0", 10),
    ("integer", 10.0, 10), ("number", "2.5", 2.5), ("number", "7", 7),
    ("number", "1e3", 1000.0), ("boolean", "true", True), ("boolean", "False", False),
    (["integer", "null"], "4", 4),
])
def test_numbers_and_booleans_in_strings_are_taken_as_declared(
        declared: Any, sent: Any, taken: Any) -> None:
    schema = {"type": "object", "properties": {"v": {"type": declared}}}
    got = decoded(schema, {"v": sent})["v"]
    assert got == taken and type(got) is type(taken)
    assert check_arguments(schema, {"v": got}) is None


@pytest.mark.parametrize(("declared", "sent"), [
    ("integer", "1.5"), ("integer", "ten"), ("integer", True), ("number", "1e999"),
    ("number", "nan"), ("boolean", "yes"), ("boolean", 1), ("string", 5),
    (["integer", "string"], "7"),  # a string is allowed too: "7" stays a string
])
def test_what_is_not_unambiguous_is_left_as_sent(declared: Any, sent: Any) -> None:
    schema = {"type": "object", "properties": {"v": {"type": declared}}}
    assert decoded(schema, {"v": sent}) == {"v": sent}


def test_an_enum_choice_in_other_case_is_taken_when_only_one_matches() -> None:
    schema = {"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["loud", "quiet"]},
        "odd": {"type": "string", "enum": ["a", "A"]}}}
    assert decoded(schema, {"mode": " Loud"}) == {"mode": "loud"}
    assert decoded(schema, {"odd": "a"}) == {"odd": "a"}
    assert decoded(schema, {"odd": " a "}) == {"odd": " a "}  # "a" or "A": left as sent
    assert "must be one of a, A" in (check_arguments(schema, {"odd": " a "}) or "")
    assert decoded(schema, {"mode": "lou"}) == {"mode": "lou"}


def test_schemas_as_mcp_servers_write_them_are_checked_without_a_crash() -> None:
    schema = {"type": "object", "properties": {"tag": {"type": ["string", "null"]},
                                               "n": {"type": ["integer", "null"]},
                                               "any": True, "odd": {"type": "uuid"}}}
    assert check_arguments(schema, {"tag": "a", "n": None, "any": 1, "odd": 2}) is None
    assert check_arguments(schema, {"n": True}) == (
        "argument `n` must be of type integer (a whole number without quotes, e.g. 10), got "
        "boolean true")
    assert check_arguments(schema, {"tag": 3}) == (
        'argument `tag` must be of type string (text in double quotes, e.g. "abc"), got '
        "integer 3")
    assert check_arguments({"properties": None}, {}) is None


def test_unparseable_arguments_are_reported_not_run(tmp_path: Path) -> None:
    reg = ToolRegistry([Echo()])
    call = ToolCall("c1", "echo", {}, arguments_error="arguments are not valid JSON: ...")
    result = reg.run(call, ToolContext(root=tmp_path))
    assert result.is_error and "not valid JSON" in result.content


def test_tool_errors_and_crashes_become_results(tmp_path: Path) -> None:
    reg = ToolRegistry([Echo()])
    failed = _run(reg, "echo", {"text": "fail"}, tmp_path)
    assert failed.is_error and failed.content == "error: asked to fail"
    crashed = _run(reg, "echo", {"text": "crash"}, tmp_path)
    assert crashed.is_error and "RuntimeError: boom" in crashed.content


def test_third_identical_call_within_six_is_not_run(tmp_path: Path) -> None:
    reg = ToolRegistry([Echo()])
    assert not _run(reg, "echo", {"text": "a"}, tmp_path).is_error
    assert not _run(reg, "echo", {"text": "a"}, tmp_path).is_error
    third = _run(reg, "echo", {"text": "a"}, tmp_path)
    assert third.is_error and "already made 2 times" in third.content


def test_identical_calls_far_apart_still_run(tmp_path: Path) -> None:
    reg = ToolRegistry([Echo()])
    _run(reg, "echo", {"text": "a"}, tmp_path)
    for i in range(6):
        _run(reg, "echo", {"text": f"other{i}"}, tmp_path)
    _run(reg, "echo", {"text": "a"}, tmp_path)
    assert not _run(reg, "echo", {"text": "b"}, tmp_path).is_error
    assert not _run(reg, "echo", {"text": "a"}, tmp_path).is_error
