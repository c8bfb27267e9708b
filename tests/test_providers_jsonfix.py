"""Tool-call argument repair on a table of broken outputs shaped like what small models send
(qwen2.5-coder, llama-3.2, SmolLM), the same table `benchmarks/repair_compare.py` runs against
the json-repair library. Every row is either repaired to exactly the object meant, with each
fix named, or an error: nothing is invented, nothing cut is completed, nothing crashes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from swival.providers.jsonfix import CUT_OFF_ERROR, MAX_DEPTH, parse_arguments

# (shape, argument text as the model sent it, the object meant; None: must be an error)
TABLE: list[tuple[str, str, dict[str, Any] | None]] = [
    ("single quotes", "{'file_path': 'src/app.py', 'limit': 40}",
     {"file_path": "src/app.py", "limit": 40}),
    ("single quotes", "{'command': 'grep -n \"TODO\" src/app.py'}",
     {"command": 'grep -n "TODO" src/app.py'}),
    ("single quotes", "{'content': \"it's done\", 'file_path': 'notes.md'}",
     {"content": "it's done", "file_path": "notes.md"}),
    ("trailing comma", '{"file_path": "a.py", "limit": 10,}', {"file_path": "a.py", "limit": 10}),
    ("trailing comma", '{"paths": ["a.py", "b.py",],}', {"paths": ["a.py", "b.py"]}),
    ("line break in a string", '{"file_path": "a.py", "content": "def f():\n    return 1\n"}',
     {"file_path": "a.py", "content": "def f():\n    return 1\n"}),
    ("line break in a string", '{"command": "cd src &&\n make"}', {"command": "cd src &&\n make"}),
    ("unquoted key", '{file_path: "src/app.py", limit: 40}',
     {"file_path": "src/app.py", "limit": 40}),
    ("unquoted key", '{pattern: "def main", path: "src"}', {"pattern": "def main", "path": "src"}),
    ("missing comma", '{"file_path": "a.py" "limit": 3}', {"file_path": "a.py", "limit": 3}),
    ("missing comma", '{"file_path": "a.py"\n "offset": 10\n "limit": 5}',
     {"file_path": "a.py", "offset": 10, "limit": 5}),
    ("text after the object", '{"file_path": "a.py"} I will read the file first.',
     {"file_path": "a.py"}),
    ("text after the object", '{"pattern": "TODO", "path": "."}\n\nThis finds every TODO.',
     {"pattern": "TODO", "path": "."}),
    ("fenced block", '```json\n{"file_path": "a.py"}\n```', {"file_path": "a.py"}),
    ("fenced block", '```\n{"command": "ls -la"}\n```', {"command": "ls -la"}),
    ("invalid escape", '{"pattern": "\\d+\\.py"}', {"pattern": "\\d+\\.py"}),
    ("invalid escape", '{"pattern": "def \\w+\\(self"}', {"pattern": "def \\w+\\(self"}),
    ("Python literal", '{"file_path": "a.py", "case_insensitive": True, "limit": None}',
     {"file_path": "a.py", "case_insensitive": True, "limit": None}),
    ("unclosed brackets", '{"file_path": "a.txt"', {"file_path": "a.txt"}),
    ("valid", '{"content": "a, b,}", "file_path": "x"}', {"content": "a, b,}", "file_path": "x"}),
    ("valid", '{"pattern": "it\'s \\\\d"}', {"pattern": "it's \\d"}),
    ("unquoted value", '{"file_path": a.txt, offset: }', None),
    ("prose", "read the file a.py please", None),
    ("inner quotes", '{"command": "echo "hi" now"}', None),
    ("cut inside a string", '{"file_path": "a.py", "content": "def f():\n    ret', None),
    ("key without value", '{"file_path": }', None),
]
COMMON_SHAPES = ("single quotes", "trailing comma", "line break in a string", "unquoted key",
                 "missing comma", "text after the object", "fenced block", "invalid escape")


@pytest.mark.parametrize(("shape", "raw", "meant"), TABLE, ids=[f"{r[0]}-{i}"
                                                                for i, r in enumerate(TABLE)])
def test_table_row(shape: str, raw: str, meant: dict[str, Any] | None) -> None:
    got = parse_arguments(raw)
    if meant is None:
        assert got.error is not None and got.value == {}
        assert "not valid JSON" in got.error or "one JSON object" in got.error
        return
    assert got.error is None and got.value == meant
    if shape == "valid":
        assert got.repairs == ()
    else:
        assert shape in got.repairs  # the fix is named, so the model can be told


def test_every_common_shape_is_repaired() -> None:
    repaired = {shape for shape, raw, meant in TABLE
                if meant is not None and parse_arguments(raw).value == meant}
    assert set(COMMON_SHAPES) <= repaired  # the bar is 7 of 8; all 8 are


def test_arguments_cut_by_the_output_limit_are_never_closed() -> None:
    for raw in ('{"file_path": "a.py", "content": "def f():\n    ret',
                '{"file_path": "a.py", "content": "x"',
                '{"file_path": "a.py", "content": "x",'):
        got = parse_arguments(raw, cut_off=True)
        assert (got.value, got.error) == ({}, CUT_OFF_ERROR)
    whole = parse_arguments('{"file_path": "a.py", "content": "x"}', cut_off=True)
    assert whole.value == {"file_path": "a.py", "content": "x"}  # complete: runs as sent


@pytest.mark.parametrize("raw", ["[" * 5000, "{\"a\": " * 5000, "{'a': [" * 3000,
                                 '{"a": ' + "[" * 900 + "]" * 900 + "}"],
                         ids=["brackets", "objects", "mixed", "closed"])
def test_deep_nesting_is_an_argument_error_not_a_crash(raw: str) -> None:
    got = parse_arguments(raw)
    assert got.value == {} and got.error is not None
    assert str(MAX_DEPTH) in got.error or "one JSON object" in got.error


def test_unicode_escapes_and_surrogates_do_not_crash() -> None:
    assert parse_arguments("{'s': '\\u00e9t\\u00e9'}").value == {"s": "été"}
    assert parse_arguments("{'s': '\\ud800'}").value == {"s": "\ud800"}
    assert parse_arguments("{'s': '\\u12'}").value == {"s": "\\u12"}


def test_an_object_sent_as_a_json_string_is_decoded_and_named() -> None:
    """Some models (and servers) encode the arguments twice: a JSON string holding the
    object. The object is meant; the model is told."""
    got = parse_arguments(json.dumps(json.dumps({"file_path": "a.py", "limit": 3})))
    assert (got.value, got.error) == ({"file_path": "a.py", "limit": 3}, None)
    assert got.repairs == ("arguments sent as a JSON string",)
    broken = parse_arguments(json.dumps("{'file_path': 'a.py',}"))
    assert broken.value == {"file_path": "a.py"}
    assert broken.repairs == ("arguments sent as a JSON string", "single quotes", "trailing comma")
    assert parse_arguments('"just a sentence"').error is not None  # not an object: an error
    cut = parse_arguments('"{\\"file_path\\": \\"a.py\\", \\"content\\": \\"half', cut_off=True)
    assert cut.value == {} and cut.error is not None  # cut: never completed, never run
