"""What the model sees of a remote tool: its name `mcp__SERVER__TOOL`, its description
and its JSON schema, whole or shortened.

Shortening keeps what a call needs (property names, types, enums, required fields,
nesting) and drops what only explains: description tails (the first sentence stays),
examples, titles, defaults and comments.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

PREFIX = "mcp__"
NAME_LIMIT = 64  # what OpenAI-style function names allow
UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"(])|\n")
TOOL_SUMMARY = 160  # characters of a shortened tool description
FIELD_SUMMARY = 80  # characters of a shortened property description
EXPLAINING = frozenset({"title", "examples", "example", "default", "$comment", "$schema",
                        "deprecated", "readOnly", "writeOnly", "markdownDescription"})
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions",
               "dependentSchemas")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
              "propertyNames", "unevaluatedProperties", "unevaluatedItems")


def exposed_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """`mcp__SERVER__TOOL` with characters a function name may not hold replaced, cut
    to NAME_LIMIT with a short hash when too long, and made unique against `taken`."""
    name = f"{PREFIX}{server}__{UNSAFE.sub('_', tool)}"
    used = set(taken)
    if len(name) <= NAME_LIMIT and name not in used:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()
    for width in range(6, 40):
        candidate = name[: NAME_LIMIT - width - 1] + "_" + digest[:width]
        if candidate not in used:
            return candidate
    raise ValueError(f"no free name for {server}/{tool}")


def first_sentence(text: str, limit: int) -> str:
    """The first sentence (or line) of `text`, cut to `limit` characters."""
    head = " ".join(SENTENCE_END.split(text.strip(), maxsplit=1)[0].split())
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def shorten(schema: Any) -> Any:
    """A JSON schema without its explanations (see the module docstring)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in EXPLAINING:
            continue
        if key == "description" and isinstance(value, str):
            short = first_sentence(value, FIELD_SUMMARY)
            if short:
                out[key] = short
        elif key in SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: shorten(sub) for name, sub in value.items()}
        elif key in SCHEMA_LISTS and isinstance(value, list):
            out[key] = [shorten(sub) for sub in value]
        elif key in SCHEMA_ONE:
            out[key] = shorten(value)
        else:
            out[key] = value
    return out


def function_schema(name: str, description: str, parameters: Mapping[str, Any],
                    ) -> dict[str, Any]:
    """The OpenAI-style tool schema the provider sends (as ToolSpec.schema() builds it)."""
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": dict(parameters)}}


def parameters_of(input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """A remote tool's input schema as function parameters: an object schema always."""
    params = {**input_schema, "type": "object"}
    params.setdefault("properties", {})
    return params
