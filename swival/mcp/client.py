"""One MCP server's session on the event loop: connect (stdio or streamable HTTP), list
its tools, call them, stop. Everything here runs on the loop thread (see loop.py).

The SDK's client is an async context manager whose task groups must be entered and left
by one task, so `Connection.run` is that task: it connects, lists the tools, reports
ready, and holds the session open until `stop()`; calls come from other tasks.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from swival.mcp.spec import ServerSpec
from swival.words import clip

CONNECTION_CLOSED = -32000  # the SDK's error codes (mcp_types)
REQUEST_TIMEOUT = -32001
MAX_TOOL_PAGES = 50  # a server that pages forever cannot hang start-up
STDERR_LINES = 20
NOISE_SHOWN = 80  # characters of a line a server wrote on stdout that is not MCP


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it; `read_only` only when it sets readOnlyHint."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


class ServerDown(Exception):
    """The server's connection is gone (it exited, or the network dropped)."""


class CallTimeout(Exception):
    """The server did not answer a call in time."""


class StderrTail:
    """A pipe for a stdio server's stderr, drained by a thread that keeps the last lines
    in memory (nothing goes to disk or to the terminal). `text()` is shown, redacted,
    when the server fails."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.file = os.fdopen(write_fd, "w")
        self._lines: deque[str] = deque(maxlen=STDERR_LINES)
        threading.Thread(target=self._drain, args=(read_fd,), daemon=True,
                         name="swival-mcp-stderr").start()

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as pipe:
            for line in pipe:
                if line.strip():
                    self._lines.append(line.rstrip()[:500])

    def text(self) -> str:
        return "\n".join(self._lines)

    def close(self) -> None:
        self.file.close()


def quiet_sdk_logs() -> None:
    """Keep the SDK's log records (with tracebacks, e.g. for every stdout line of a server
    that is not MCP) off the terminal; what they mean is reported with the server."""
    log = logging.getLogger("mcp")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
        log.propagate = False


def offending_line(error: Exception) -> str:
    """The text a server wrote on stdout that did not parse as MCP, as the SDK's
    validation error holds it (else the error's own words)."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        with_input = [e.get("input") for e in errors() if isinstance(e.get("input"), str)]
        if with_input:
            return clip(with_input[0], NOISE_SHOWN)
    return clip(str(error), NOISE_SHOWN)


def describe(error: BaseException) -> str:
    """A failure in a few words: the first leaf of an exception group, its type when the
    message alone would not say what happened."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if getattr(error, "code", None) == CONNECTION_CLOSED:
        return "it exited or closed the connection"
    if type(error).__name__ in ("ConnectError", "ConnectTimeout"):  # httpx's
        return f"cannot connect to its url ({str(error).strip() or 'timed out'})"
    if isinstance(error, OSError) and error.strerror:
        where = f" ({error.filename})" if error.filename else ""
        return f"{error.strerror}{where}"
    text = str(error).strip()
    name = type(error).__name__
    if not text:
        return name
    return text if name in ("MCPError", "Exception", "RuntimeError") else f"{name}: {text}"


class Connection:
    """One server. `state`: starting, ready, failed, down or stopped; `error` says why
    for the last three (a person reads it; secrets are redacted by the caller)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.state = "starting"
        self.error = ""
        self.tools: list[RemoteTool] = []
        self.stderr: StderrTail | None = None
        self.noise = ""  # the first line it wrote on stdout that is not MCP
        self.http_status = ""  # the first error status its url answered, e.g. "HTTP 404 Not Found"
        self._client: Any = None
        self._stop: asyncio.Event | None = None

    async def run(self, ready: asyncio.Future[None]) -> None:
        """Connect, list the tools, resolve `ready`, then hold the session until stop().
        Never raises: a failure sets `state` and `error` (and resolves `ready`)."""
        self._stop = asyncio.Event()
        try:
            from mcp import Client  # ~0.6 s on its own; only ever on the loop thread

            quiet_sdk_logs()
            async with Client(self._transport(), cache=None,
                              read_timeout_seconds=self.spec.call_timeout,
                              message_handler=self._noticed) as client:
                self._client = client
                self.tools = await self._list(client)
                self.state = "ready"
                ready.set_result(None)
                await self._stop.wait()
            if self.state == "ready":
                self.state = "stopped"
        except asyncio.CancelledError:
            self.state, self.error = "failed", self.error or "stopped while starting"
            raise
        except BaseException as error:  # the SDK raises groups and transport errors
            self._failed(error)
        finally:
            self._client = None
            if self.stderr is not None:
                self.stderr.close()
            if not ready.done():
                ready.set_result(None)

    async def _noticed(self, message: Any) -> None:
        """The SDK hands over what it could not read from the server as an exception."""
        if isinstance(message, Exception) and not self.noise:
            self.noise = offending_line(message)

    def noise_note(self) -> str:
        """Words to add to a failure when the server wrote text that is not MCP."""
        if not self.noise:
            return ""
        return (f"; it wrote text that is not MCP on its stdout (\"{self.noise}\"), where a "
                "stdio server may write only MCP messages")

    def start_failure(self, error: BaseException) -> str:
        """Why it did not start, for a person. The SDK reports any HTTP error status of
        its url as one vague error; the status itself says what to fix."""
        if self.http_status:
            return (f"its url answered {self.http_status}; check `url` and `headers` in its "
                    "table")
        return describe(error) + self.noise_note()

    async def _noted(self, response: Any) -> None:
        if response.status_code >= 400 and not self.http_status:
            self.http_status = f"HTTP {response.status_code} {response.reason_phrase}".strip()

    def _failed(self, error: BaseException) -> None:
        if self.state == "down":
            return  # a failed call already said why
        if self.state == "ready":
            self.state, self.error = "down", f"connection lost: {describe(error)}"
        else:
            self.state, self.error = "failed", self.start_failure(error)

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=dict(spec.headers),
                                      timeout=httpx2.Timeout(30.0, read=spec.call_timeout),
                                      event_hooks={"response": [self._noted]})
            return streamable_http_client(spec.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self.stderr = StderrTail()
        params = StdioServerParameters(command=spec.command or "", args=list(spec.args),
                                       env=dict(spec.env), cwd=spec.cwd)
        return stdio_client(params, errlog=self.stderr.file)

    async def _list(self, client: Any) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                hint = tool.annotations.read_only_hint if tool.annotations else None
                tools.append(RemoteTool(self.spec.name, tool.name, tool.description or "",
                                        dict(tool.input_schema), hint is True))
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def relist(self) -> None:
        """List the tools again (/mcp refresh); a failure marks the server down."""
        if self.state != "ready" or self._client is None:
            return
        try:
            self.tools = await self._list(self._client)
        except Exception as error:
            self._lost(error)

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's CallToolResult. Raises ServerDown, CallTimeout, or the SDK's
        error for a protocol-level refusal (unknown tool, invalid arguments)."""
        client = self._client
        if self.state != "ready" or client is None:
            raise ServerDown(self.error or f"the server is {self.state}")
        from mcp import MCPError

        try:
            return await client.call_tool(tool, arguments,
                                          read_timeout_seconds=self.spec.call_timeout)
        except MCPError as error:
            if error.code == REQUEST_TIMEOUT:
                raise CallTimeout(str(error)) from None
            if error.code != CONNECTION_CLOSED:
                raise
            self._lost(error)
        except (OSError, EOFError) as error:
            self._lost(error)
        raise ServerDown(self.error)

    def _lost(self, error: BaseException) -> None:
        self.state, self.error = "down", describe(error)
        if self._stop is not None:
            self._stop.set()  # let run() leave the session and reap the process

    def stop(self) -> None:
        """Ask run() to leave the session (on the loop thread)."""
        if self._stop is not None:
            self._stop.set()
