"""The import picture of docs/architecture.md stays true: each module imports only from
layers below it, siblings in a layer never import each other, and the heavy or
UI-specific libraries are imported only where they are allowed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "swival"

LAYERS = {
    "messages": 0, "errors": 0, "redaction": 0, "looseness": 0, "words": 0, "procscrub": 0,
    "config": 1, "prompts": 1, "state": 1,
    "events": 2, "effects": 2, "trust": 2, "starter": 2,
    "providers": 3, "tools": 3, "context": 3,
    "agent": 4, "mcp": 4,
    "session": 5, "commands": 5, "render": 5, "doctor": 5, "records": 5,
    "repl": 6, "oneshot": 6, "cliparse": 6, "launch": 6,
    "cli": 7, "__main__": 8, "__init__": 0,
}
ONLY_IN = {
    "mcp": ("mcp",),  # the MCP SDK, and its HTTP client, only in swival/mcp/
    "httpx2": ("mcp",),
    "litellm": ("providers",),
    "httpx": ("providers", "tools"),  # model servers; fetch_url
    "prompt_toolkit": ("repl",),
    "rich": ("render", "cli"),
}


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_respects_layers(path: Path) -> None:
    unit = _unit(path)
    assert unit in LAYERS, f"{unit} has no layer; add it to docs/architecture.md and this test"
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "swival":
            parts = name.split(".")
            if len(parts) == 1:
                continue
            target = parts[1]
            if target == "__init__" or target == unit:
                continue
            assert LAYERS[target] < LAYERS[unit], f"{unit} (L{LAYERS[unit]}) imports {name}"
        elif top in ONLY_IN:
            assert unit in ONLY_IN[top], f"{unit} imports {top}; only {ONLY_IN[top]} may"


CONTEXT = PACKAGE / "context"
KNOWLEDGE_TOOLS = {"think", "todo", "snapshot"}  # their effects are carried out by context/


def _code_strings(path: Path) -> list[str]:
    """String constants of a module, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def test_context_imports_nothing_from_tools() -> None:
    for path in CONTEXT.rglob("*.py"):
        assert not [n for n in _imports(path) if n.startswith("swival.tools")], path.name


def test_context_never_names_a_tool() -> None:
    """Tools declare what context needs (read-only, meta); context decides nothing by a
    tool's name and names no tool in what it writes — but the knowledge tools, whose
    results it writes itself, and whose names it must not compare against either."""
    from swival.tools.catalog import default_tools

    names = {tool.spec.name for tool in default_tools()}
    for path in sorted(CONTEXT.rglob("*.py")):
        for text in _code_strings(path):
            assert text not in names, f"{path.name} compares against the tool name {text!r}"
            mentioned = {n for n in names - KNOWLEDGE_TOOLS if re.search(rf"\b{n}\b", text)}
            assert not mentioned, f"{path.name} names {mentioned} in {text!r}"


def test_commands_reach_no_tool_internals() -> None:
    """Slash commands use the agent's own calls (`undo_last`, `project_root`, ...), never
    the tools' context object behind it."""
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reached = [n.lineno for n in ast.walk(tree)
                   if isinstance(n, ast.Attribute) and n.attr == "tool_ctx"]
        assert not reached, f"{path.name} reaches into agent.tool_ctx on lines {reached}"
