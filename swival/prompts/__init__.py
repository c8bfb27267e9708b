"""Prompts shipped as package data, and the system prompt assembly."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
INSTRUCTION_CAP = 10_000


def load(name: str) -> str:
    """The text of `swival/prompts/<name>.md`."""
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def instruction_files(root: Path) -> list[tuple[str, str]]:
    """(name, text) of each instruction file at the project root, capped at 10,000 chars."""
    found = []
    for name in INSTRUCTION_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if len(text) > INSTRUCTION_CAP:
            text = text[:INSTRUCTION_CAP] + f"\n[... {name} cut at {INSTRUCTION_CAP} characters]"
        found.append((name, text.strip()))
    return found


def system_prompt(root: Path) -> str:
    """The fixed system prompt: nothing in it changes during a session."""
    parts = [load("system").strip()]
    for name, text in instruction_files(root):
        parts.append(f"Project instructions from {name}:\n{text}")
    return "\n\n".join(parts)
