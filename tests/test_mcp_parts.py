"""The MCP client's pure parts: exposed names, shortened schemas, rendered results and
the schema budget's plan (counted with the context engine's real counter)."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

from swival.context.tokens import TokenCounter
from swival.mcp.budget import entries_for, make_plan
from swival.mcp.client import RemoteTool
from swival.mcp.content import render
from swival.mcp.schema import NAME_LIMIT, exposed_name, first_sentence, shorten
from swival.mcp.tools import gateway_schemas
from swival.words import percent

COUNT = TokenCounter().schemas


def test_exposed_names_are_valid_unique_and_bounded() -> None:
    assert exposed_name("github", "create_issue") == "mcp__github__create_issue"
    assert exposed_name("fs", "read file/v2.1") == "mcp__fs__read_file_v2_1"
    long = exposed_name("s" * 32, "t" * 80)
    assert len(long) <= NAME_LIMIT and long.startswith("mcp__" + "s" * 32)
    taken = {"mcp__fs__a_b"}
    other = exposed_name("fs", "a.b", taken)
    assert other != "mcp__fs__a_b" and other.startswith("mcp__fs__a_b")


def test_shortening_keeps_names_types_and_required_and_drops_explanations() -> None:
    schema = {
        "type": "object", "title": "Args", "$schema": "x",
        "properties": {
            "title": {"type": "string", "title": "Title", "description":
                      "The issue title. It should be short and say what is wrong."},
            "labels": {"type": "array", "items": {"type": "string", "examples": ["bug"]},
                       "default": []},
            "state": {"enum": ["open", "closed"], "description": "State.\nMore lines."},
            "meta": {"anyOf": [{"type": "object", "properties": {"k": {"type": "string",
                                                                       "title": "K"}}},
                               {"type": "null"}]},
        },
        "required": ["title"],
    }
    short = shorten(schema)
    assert short == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "The issue title."},
            "labels": {"type": "array", "items": {"type": "string"}},
            "state": {"enum": ["open", "closed"], "description": "State."},
            "meta": {"anyOf": [{"type": "object", "properties": {"k": {"type": "string"}}},
                               {"type": "null"}]},
        },
        "required": ["title"],
    }
    assert first_sentence("Use e.g. this form. Then more.", 80) == "Use e.g. this form."
    assert first_sentence("x" * 200, 20) == "x" * 19 + "…"


def _result(*blocks: Any, structured: Any = None, error: bool = False) -> Any:
    return NS(content=list(blocks), structured_content=structured, is_error=error)


def test_results_render_compactly_and_describe_what_is_not_text() -> None:
    pretty = json.dumps({"rows": [{"id": 1}, {"id": 2}]}, indent=2)
    assert render(_result(NS(type="text", text=pretty),
                          structured={"rows": [{"id": 1}, {"id": 2}]})) == \
        '{"rows":[{"id":1},{"id":2}]}'
    assert render(_result(NS(type="text", text="3"), structured={"result": 3})) == "3"
    assert render(_result(structured={"a": [1, 2]})) == '{"a":[1,2]}'
    image = render(_result(NS(type="image", data="A" * 4096, mime_type="image/png")))
    assert image == ("[image: image/png, 3.0 KB; not shown to the model, which reads text "
                     "only]")
    embedded = render(_result(NS(type="resource", resource=NS(
        uri="file:///notes.md", mime_type="text/markdown", text="- milk"))))
    assert embedded == "[resource file:///notes.md (text/markdown)]\n- milk"
    blob = render(_result(NS(type="resource", resource=NS(uri="db://x", mime_type=None,
                                                          blob="QUJD"))))
    assert blob == "[resource db://x: unknown type, 3 bytes of binary data, not shown]"
    link = render(_result(NS(type="resource_link", name="spec", uri="https://x/spec",
                             mime_type="text/html")))
    assert link == "[resource link: spec <https://x/spec>, text/html]"
    assert render(_result()) == "[the tool returned no content]"
    assert render(_result(NS(type="text", text="{not json"))) == "{not json"


def _tools(server: str, n: int, words: int) -> list[RemoteTool]:
    description = "Find records. " + "This explains far more than a call needs. " * words
    schema = {"type": "object", "properties": {
        "query": {"type": "string", "description": description, "title": "Query"},
        "limit": {"type": "integer", "default": 10, "examples": [5]}}, "required": ["query"]}
    return [RemoteTool(server, f"tool_{i}", description, schema, False) for i in range(n)]


def _plan(budget: int, **servers: list[RemoteTool]) -> Any:
    taken: set[str] = set()
    entries = {name: entries_for(tools, taken) for name, tools in servers.items()}
    return make_plan(entries, 1000, budget, COUNT, lambda held: COUNT(gateway_schemas(held)))


def test_under_30_percent_everything_is_sent_whole_without_a_word() -> None:
    plan = _plan(20_000, small=_tools("small", 3, 2))
    assert [s.mode for s in plan.servers] == ["full"] and plan.warning() is None


def test_between_30_and_50_percent_there_is_a_warning_with_figures_per_server() -> None:
    plan = _plan(6964, small=_tools("small", 3, 2), mid=_tools("mid", 8, 6))
    assert all(s.mode == "full" for s in plan.servers)
    assert 0.30 * 6964 < plan.total <= 0.50 * 6964
    text = plan.warning()
    assert text is not None
    for server in plan.servers:
        assert f"{server.name} {server.tools} tools {server.full}" in text
    assert "shortened" not in text and "Held back" not in text
    assert " Now " not in text  # nothing changed: the figure would only repeat the first


def test_a_server_with_one_tool_is_counted_in_the_singular() -> None:
    plan = _plan(2000, one=_tools("one", 1, 30))
    text = plan.warning() or ""
    assert f"one 1 tool {plan.servers[0].full}" in text and "1 tools" not in text


def test_over_50_percent_the_most_expensive_is_shortened_first() -> None:
    plan = _plan(6964, small=_tools("small", 3, 2), big=_tools("big", 14, 8))
    modes = {s.name: s.mode for s in plan.servers}
    assert modes == {"small": "full", "big": "short"}
    assert plan.total <= 0.5 * 6964 < plan.whole
    text = plan.warning() or ""
    assert "shortened the schemas of big" in text
    assert text.endswith(f" Now {plan.total} tokens ({percent(plan.total, 6964)}).")


def test_sixty_tools_at_8k_are_held_back_behind_mcp_call_and_mcp_list() -> None:
    plan = _plan(6964, small=_tools("small", 3, 2), many=_tools("many", 60, 8))
    modes = {s.name: s.mode for s in plan.servers}
    assert modes == {"small": "full", "many": "held"}
    assert plan.total <= 0.5 * 6964
    assert plan.gateway == COUNT(gateway_schemas(["many"])) < 300
    many = next(s for s in plan.servers if s.name == "many")
    assert many.short > 0.5 * 6964  # shortening alone could not make it fit
    text = plan.warning() or ""
    assert "Held back many" in text and "mcp_list and mcp_call" in text
