"""The event loop the async MCP SDK runs on: one daemon thread per session, and a way to
wait for its results from the synchronous agent that a Ctrl-C can always interrupt."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
POLL_SECONDS = 0.1


class LoopThread:
    """An asyncio loop running forever on a daemon thread, started on first use."""

    def __init__(self, name: str = "swival-mcp") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self._name, daemon=True).start()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop; its future can be waited on from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, callback: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(callback, *args)


def wait(future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
    """The future's result. A KeyboardInterrupt (Ctrl-C, or SIGTERM as Terminated) while
    waiting cancels the work on the loop and propagates; `timeout` raises TimeoutError.
    The wait wakes every POLL_SECONDS so a signal's handler runs promptly."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            left = POLL_SECONDS if deadline is None else min(POLL_SECONDS,
                                                             deadline - time.monotonic())
            try:
                return future.result(max(left, 0))
            except concurrent.futures.TimeoutError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError from None
    except BaseException:
        future.cancel()
        raise
