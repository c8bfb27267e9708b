"""Requests that tools make of the context layer.

Tools and the context engine are siblings (layer 3) and do not import each other.
A tool that needs to change what the model sees (think, todo, snapshot) validates its
arguments and returns one of these in `ToolResult.effect`; the agent hands it to the
context engine, which applies it and produces the final tool result.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ThinkEffect:
    thought: str
    thought_number: int | None = None
    revises: int | None = None
    branch: str | None = None


@dataclass(frozen=True)
class TodoEffect:
    action: str  # add | done | remove | list | clear
    text: str | None = None
    id: int | None = None


@dataclass(frozen=True)
class SnapshotEffect:
    action: str  # save | restore | cancel | status
    label: str | None = None
    summary: str | None = None
    force: bool = False


Effect = ThinkEffect | TodoEffect | SnapshotEffect
