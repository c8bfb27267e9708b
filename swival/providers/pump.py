"""The direct transports' two time limits for a stream that a library reads for us (litellm).

litellm hides the connection, and its `timeout` only bounds each socket read, so a hosted API
that keeps a connection alive with comments or empty lines (which litellm swallows) would hold
an attempt open forever. A `ChunkPump` therefore opens and reads the stream in a worker thread
and hands the chunks over through a queue; the caller waits for each chunk no longer than the
limit in force (wire.py's `Limits`, the same settings as the direct transports):

- `first` (`request_timeout`): from the call until the first piece of the reply;
- `idle` (`idle_timeout`): after that, the longest stretch without a new piece of it.

A chunk is a piece of the reply when it moved the caller's `progress` count (text, reasoning,
tool-call fragments, the finish reason, usage), so a slow generation that keeps producing is
never cut. When a limit passes, the attempt fails with a `Transient` naming it, and is retried
like a dropped stream. The worker cannot be stopped in the middle of a read: `close()` asks
it to stop, closes the stream as far as it can be closed from outside, and leaves the daemon
thread to end on its own (at the next chunk, or at litellm's own read timeout).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from swival.providers.streaming import Transient
from swival.providers.wire import Limits, limit_message

_ITEM, _END, _ERROR = "item", "end", "error"


class ChunkPump:
    """Runs `open_stream()` and iterates its result in a worker thread (see module docs).
    Use `chunks(progress)` once, then `close()` (also on the way out of an error)."""

    def __init__(self, open_stream: Callable[[], Iterable[Any]], limits: Limits,
                 on_close: Callable[[Any], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.stream: Any = None  # what open_stream returned, once it has
        self._open = open_stream
        self._on_close = on_close
        self._clock = clock
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stopped = threading.Event()
        self._ended = False  # the stream ran to its end: nothing to close
        threading.Thread(target=self._run, name="swival-hosted-stream", daemon=True).start()

    def _run(self) -> None:
        try:
            self.stream = self._open()
            for chunk in self.stream:
                if self._stopped.is_set():  # given up while this read was blocked
                    self._on_close(self.stream)
                    return
                self._queue.put((_ITEM, chunk))
            self._queue.put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self._queue.put((_ERROR, exc))

    def chunks(self, progress: Callable[[], int]) -> Iterator[Any]:
        """The stream's chunks. `progress()` is read after each chunk is handled; when it
        grew, the chunk was a piece of the reply and the idle limit starts again. Raises
        Transient when a limit passes, and whatever opening or reading the stream raised."""
        started, seen = False, progress()
        deadline = self._clock() + self.limits.first
        while True:
            try:
                kind, value = self._queue.get(timeout=max(0.0, deadline - self._clock()))
            except queue.Empty:
                raise Transient(limit_message(self.limits, started)) from None
            if kind == _END:
                self._ended = True
                return
            if kind == _ERROR:
                raise value
            yield value
            now = progress()
            if now != seen:
                started, seen = True, now
                deadline = self._clock() + self.limits.idle

    def close(self) -> None:
        """Stop reading: the worker ends at its next chunk; a stream given up before its
        end is closed now (a read blocked in the worker may still finish first). A stream
        that ended is left alone: its connection may serve the next request."""
        self._stopped.set()
        if self.stream is not None and not self._ended:
            self._on_close(self.stream)
