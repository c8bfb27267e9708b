"""The six core tool schemas: exact names and parameters, and their token cost."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from swival.tools.core import core_tools

SCHEMA_TOKEN_BUDGET = 550


def test_names_parameters_and_required() -> None:
    specs = {t.spec.name: t.spec.parameters for t in core_tools()}
    expected = {
        "read_file": (["file_path", "offset", "limit"], ["file_path"]),
        "list_files": (["path", "pattern"], []),
        "grep": (["pattern", "path", "include", "case_insensitive"], ["pattern"]),
        "run_command": (["command", "timeout"], ["command"]),
        "write_file": (["file_path", "content"], ["file_path", "content"]),
        "edit_file": (["file_path", "old_string", "new_string", "replace_all"],
                      ["file_path", "old_string", "new_string"]),
    }
    assert list(specs) == list(expected)
    for name, (params, required) in expected.items():
        assert list(specs[name]["properties"]) == params, name
        assert list(specs[name].get("required", [])) == required, name


def test_read_only_flags() -> None:
    flags = {t.spec.name: t.read_only for t in core_tools()}
    assert flags == {"read_file": True, "list_files": True, "grep": True,
                     "run_command": False, "write_file": False, "edit_file": False}


def test_schemas_fit_the_token_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # tiktoken would download its encoding; litellm ships a copy (Swival runs offline).
    spec = importlib.util.find_spec("litellm")
    assert spec and spec.submodule_search_locations
    cache = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", os.environ.get("TIKTOKEN_CACHE_DIR", str(cache)))
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base")
    per_tool = {t.spec.name: len(encoding.encode(json.dumps(t.spec.schema())))
                for t in core_tools()}
    total = sum(per_tool.values())
    print(f"core tool schemas: {total} tokens (cl100k_base) {per_tool}")
    assert total <= SCHEMA_TOKEN_BUDGET
