"""What the first request needs, loaded off the start-up path.

Started in a background thread once the prompt has been drawn (or when a line comes
first): the tokenizer (the toolbar's first context figure and the overhead warning come
from it), then the model client (the HTTP client, or litellm for a hosted model). The
request may go once both are loaded; only then is markdown (which only the answer needs)
loaded. The two are loaded one after the other on purpose: both are Python-bound
(reading the tokenizer's table, importing modules), so two threads would only take turns
on the interpreter lock and finish no sooner. For the same reason, when a request is
already waiting, markdown is loaded only once that request has reached the server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from swival.render import preload


class WarmUp:
    """`count` loads the tokenizer (and returns the overhead warning, or None), `client`
    the model client, `later` what only the answer needs. `wait()` blocks until the
    request may go and returns the first error either raised (once), or None; `sent()`
    says that request has gone, so `later` may run."""

    def __init__(self, count: Callable[[], str | None], client: Callable[[], None],
                 later: Callable[[], None] | None = None) -> None:
        self._count = count
        self._client = client
        self._later = later or preload  # what only the answer needs
        self._thread = threading.Thread(target=self._run, name="swival-warm-up", daemon=True)
        self._ready = threading.Event()
        self._asked = threading.Event()  # a request waited for the warm-up
        self._sent = threading.Event()  # ... and has reached the server (or never will)
        self._error: BaseException | None = None
        self.late_notice: str | None = None  # the overhead warning, shown once

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def start(self) -> None:
        if not self.started:
            self._thread.start()

    def wait(self) -> BaseException | None:
        self._asked.set()
        self.start()
        self._ready.wait()
        error, self._error = self._error, None
        return error

    def sent(self) -> None:
        """The request that waited has reached the server, or will not be sent: what only
        the answer needs may load now."""
        self._sent.set()

    def _run(self) -> None:
        try:
            self.late_notice = self._count()
            self._client()
        except BaseException as error:  # reported when the first request needs it
            self._error = error
        finally:
            self._ready.set()
        if self._asked.is_set():
            self._sent.wait()  # not to take turns with the waiting request on the lock
        try:
            self._later()
        except BaseException as error:  # noqa: BLE001 - the answer's rendering reports it
            self._error = self._error or error
