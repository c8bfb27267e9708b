"""Config tables that run the test MCP servers of tests/mcpserver.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SERVER = str(Path(__file__).with_name("mcpserver.py"))


def table(name: str, kind: str, **extra: str) -> str:
    """`[mcp_servers.NAME]` running `tests/mcpserver.py KIND` over stdio; `extra` adds keys
    as TOML text (`trust="true"`, `env='{ A = "b" }'`)."""
    lines = [f"[mcp_servers.{name}]", f"command = {json.dumps(sys.executable)}",
             f"args = {json.dumps([SERVER, kind])}"]
    lines += [f"{key} = {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"
