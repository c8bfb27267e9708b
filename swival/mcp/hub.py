"""Every configured server, started in parallel on the background loop, behind a
synchronous facade for the agent's thread.

    hub = Hub(specs)
    hub.start()             returns at once; servers connect in the background
    hub.settle()            waits until each has started or failed (its startup_timeout)
    hub.call(server, tool, arguments)   CallToolResult; ServerDown / CallTimeout
    hub.restart(name)       stop it and start it again
    hub.close()             stops every server (also at interpreter exit)

A Ctrl-C while the agent waits for a call cancels the call and propagates.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

from swival.mcp.client import Connection
from swival.mcp.loop import POLL_SECONDS, LoopThread, wait
from swival.mcp.spec import ServerSpec

CLOSE_SECONDS = 6.0  # the SDK closes stdin, waits 2 s, then SIGTERM, 2 s, SIGKILL


class Hub:
    """The session's MCP servers. `connections` holds every spec's current Connection."""

    def __init__(self, specs: Sequence[ServerSpec], loop: LoopThread | None = None) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.connections = {spec.name: Connection(spec) for spec in specs}
        self._loop = loop or LoopThread()
        self._started: dict[str, concurrent.futures.Future[None]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._closed = False
        self.started_at = 0.0

    def start(self, names: Iterable[str] | None = None) -> None:
        """Start these servers (default: all) in the background; returns at once."""
        if not self._started and not self._closed:
            atexit.register(self.close)
        self.started_at = time.monotonic()
        for name in names if names is not None else list(self.specs):
            connection = Connection(self.specs[name])
            self.connections[name] = connection
            self._started[name] = self._loop.submit(self._start(connection))

    async def _start(self, connection: Connection) -> None:
        """Run the connection in its own task; resolve once it is up, or has failed, or
        its startup time ran out (then it is stopped and marked failed)."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        task = loop.create_task(connection.run(ready))
        self._tasks[connection.spec.name] = task
        timeout = connection.spec.startup_timeout
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            connection.state = "failed"
            connection.error = (f"did not start within {timeout:g} s (startup_timeout)"
                                f"{connection.noise_note()}")
            task.cancel()

    def starting(self) -> list[str]:
        """Servers whose start has not resolved yet."""
        return [name for name, future in self._started.items() if not future.done()]

    def settle(self, timeout: float | None = None) -> None:
        """Wait until every started server is up or has failed (each is bounded by its
        own startup_timeout), or `timeout` passes. A Ctrl-C propagates; the servers go
        on starting."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pending = list(self._started.values())
        while pending and (deadline is None or time.monotonic() < deadline):
            # Short waits, so a Ctrl-C's handler runs at once.
            pending = list(concurrent.futures.wait(pending, POLL_SECONDS).not_done)

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Call `tool` on `server` and wait for its CallToolResult (see Connection.call)."""
        connection = self.connections[server]
        return wait(self._loop.submit(connection.call(tool, arguments)))

    def relist(self, names: Sequence[str]) -> None:
        """List these servers' tools again (each bounded by its startup timeout)."""
        async def relist_all() -> None:
            await asyncio.gather(*(self._bounded(self.connections[n]) for n in names))

        wait(self._loop.submit(relist_all()))

    async def _bounded(self, connection: Connection) -> None:
        try:
            await asyncio.wait_for(connection.relist(), connection.spec.startup_timeout)
        except TimeoutError:
            connection.state, connection.error = "down", "did not list its tools in time"

    def restart(self, names: Iterable[str]) -> None:
        """Stop these servers and start them again (in the background, like start)."""
        names = list(names)
        self._stop(names)
        self.start(names)

    def _stop(self, names: Sequence[str]) -> None:
        async def stop_all() -> None:
            tasks = []
            for name in names:
                self.connections[name].stop()
                task = self._tasks.pop(name, None)
                if task is not None:
                    if self.connections[name].state == "starting":
                        task.cancel()
                    tasks.append(task)
            if tasks:
                await asyncio.wait(tasks, timeout=CLOSE_SECONDS)

        if self._tasks:
            # A server that will not stop is left to the SDK's kill escalation.
            with contextlib.suppress(TimeoutError):
                wait(self._loop.submit(stop_all()), CLOSE_SECONDS + 1)

    def close(self) -> None:
        """Stop every server; bounded, safe to call twice (also registered at exit)."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._stop(list(self.specs))
