"""The six core tools: read, list, search, run, write, edit."""

from __future__ import annotations

from swival.tools.base import Tool
from swival.tools.edit_file import EditFile
from swival.tools.grep import Grep
from swival.tools.list_files import ListFiles
from swival.tools.read_file import ReadFile
from swival.tools.run_command import RunCommand
from swival.tools.write_file import WriteFile


def core_tools() -> list[Tool]:
    """Fresh instances, in the order their schemas are sent to the model."""
    return [ReadFile(), ListFiles(), Grep(), RunCommand(), WriteFile(), EditFile()]
