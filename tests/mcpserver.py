"""Real MCP servers for the tests, written with the official SDK (`mcp.server.mcpserver`).

    python tests/mcpserver.py KIND            serve KIND over stdio
    python tests/mcpserver.py KIND --http     serve KIND over streamable HTTP on 127.0.0.1,
                                              port 0; prints "PORT <n>" once listening

Kinds:
- `basic`: `add` (read-only), `echo`, `big` (n characters), `image`, `resource`, `table`
  (structured content), `fail` (a tool error), `env` (the value of an environment
  variable), `header` (the value of a request header, HTTP only), `pid`, `dies` (the
  process exits in the middle of the call), `hang` (never answers), `slow` (answers after
  `seconds`);
- `many`: 60 tools with long descriptions, examples and titles (the schema-budget case);
- `mixed`: the same 60 tools, the even-numbered ones marked read-only (readOnlyHint);
- `slowstart`: `basic`, after sleeping `SLOWSTART_SECONDS` (default 30) before serving;
- `crash`: writes a line to stderr and exits before serving;
- `banner`: `basic`, after writing a banner line that is not MCP on stdout;
- `garbage`: answers every line it reads with text that is not MCP;
- `nullable`: one tool, `note`, whose optional argument is advertised as
  `"type": ["string", "null"]`, as servers written with zod (TypeScript) do.

Every call is appended to the file named by `MCP_CALL_LOG`, when set, so tests can see
which calls reached the server; `MCP_PID_FILE` gets the process id of every server started.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, ImageContent, TextResourceContents, ToolAnnotations


def _log(name: str, arguments: dict[str, Any]) -> None:
    path = os.environ.get("MCP_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps([name, arguments]) + "\n")


def basic(name: str = "basic") -> MCPServer:
    server: MCPServer = MCPServer(name)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        _log("add", {"a": a, "b": b})
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        _log("echo", {"text": text})
        return text

    @server.tool()
    def big(n: int) -> str:
        """Return n characters in lines of 99 x's."""
        _log("big", {"n": n})
        line = "x" * 99 + "\n"
        return (line * (n // 100 + 1))[:n]

    @server.tool()
    def image() -> ImageContent:
        """A small PNG image."""
        data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 2040).decode()
        return ImageContent(type="image", data=data, mime_type="image/png")

    @server.tool()
    def resource() -> EmbeddedResource:
        """An embedded text resource."""
        return EmbeddedResource(type="resource", resource=TextResourceContents(
            uri="file:///notes/todo.md", mime_type="text/markdown", text="- buy milk"))

    @server.tool(structured_output=True)
    def table() -> dict[str, Any]:
        """Rows of a small table as structured content."""
        return {"rows": [{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}]}

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with the reason given."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def env(var: str, repeat: int = 1) -> str:
        """The value of an environment variable of the server process (`repeat` lines)."""
        return "\n".join([os.environ.get(var, "<unset>")] * repeat)

    @server.tool()
    async def header(name: str, ctx: Context) -> str:
        """The value of a header of the HTTP request that carried this call."""
        headers = ctx.headers
        return headers.get(name, "<none>") if headers is not None else "<not http>"

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def dies() -> str:
        """Exits the whole server process in the middle of the call."""
        _log("dies", {})
        sys.stderr.write("dying on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    def hang() -> str:
        """Never returns."""
        _log("hang", {})
        while True:
            time.sleep(1)

    @server.tool()
    def slow(seconds: float) -> str:
        """Returns after the given number of seconds."""
        time.sleep(seconds)
        return f"slept {seconds}"

    return server


FILLER = ("This tool is part of a large enterprise integration suite and supports many "
          "options that most callers never need. ")


def many(name: str = "many", hinted: bool = False) -> MCPServer:
    server: MCPServer = MCPServer(name)
    for i in range(60):
        hint = ToolAnnotations(read_only_hint=True) if hinted and i % 2 == 0 else None
        server.add_tool(_search(i), name=f"search_collection_{i:02d}",
                        title=f"Search collection {i}", annotations=hint)
    return server


def _search(number: int) -> Any:
    def tool(query: str, limit: int = 10, cursor: str = "", verbose: bool = False) -> str:
        return f"tool {number}: {query} (limit {limit})"

    tool.__doc__ = (f"Search collection number {number} for records matching a query. "
                    + FILLER * 4 + 'Example: {"query": "status:open", "limit": 5}.')
    return tool


def nullable() -> MCPServer:
    server: MCPServer = MCPServer("nullable")

    @server.tool()
    def note(text: str, tag: str | None = None) -> str:
        """Return the text with its tag."""
        return f"{text} [{tag}]"

    advertised = server._tool_manager.get_tool("note").parameters  # noqa: SLF001
    advertised["properties"]["tag"] = {"type": ["string", "null"]}
    return server


def build(kind: str) -> MCPServer:
    if kind in ("many", "mixed"):
        return many(kind, hinted=kind == "mixed")
    if kind == "slowstart":
        time.sleep(float(os.environ.get("SLOWSTART_SECONDS", "30")))
    if kind == "nullable":
        return nullable()
    if kind == "banner":
        print("basic server v1.0 listening on stdio", flush=True)
        return basic(kind)
    if kind == "garbage":
        for _ in sys.stdin:
            print("Unknown command, type help for help", flush=True)
        sys.exit(0)
    if kind == "crash":
        sys.stderr.write("fatal: cannot open the database\n")
        sys.exit(2)
    return basic(kind)


def serve_http(server: MCPServer) -> None:
    import anyio
    import uvicorn

    app = server.streamable_http_app()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    config = uvicorn.Config(app, log_level="warning")
    web = uvicorn.Server(config)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    anyio.run(lambda: web.serve(sockets=[sock]))


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "basic"
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
    server = build(kind)
    if "--http" in sys.argv:
        serve_http(server)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
