"""Talking to a model server directly over httpx: one client, streamed POSTs, two time limits.

`HttpChannel` owns one `httpx.Client` per provider (created on first use, or ahead of time by
`warm()`), so connections are reused and the client's set-up is paid once. `post()` sends a
streamed request and returns an `OpenReply` whose `lines()` the transport decodes.

Two limits end an attempt that stops making progress (docs/providers.md, "Time limits"):

- `first` (`request_timeout`): from sending the request until the first piece of the reply.
  This covers loading the model and processing the prompt, during which local servers send
  nothing at all, so it is long.
- `idle` (`idle_timeout`): once the reply streams, the longest stretch with no new piece of it.
  Only pieces of the reply count (text, reasoning, tool-call fragments, the final record), so
  keep-alive comments or blank lines cannot hold an attempt open; a slow generation that keeps
  sending tokens is never cut.

httpx's own read timeout can only bound each socket read, so a `Watchdog` thread enforces the
deadline: when it passes, it shuts the socket down, the blocked read ends, and the attempt
fails with a `Transient` naming the limit (and is retried like any dropped stream). httpx's
read timeout stays as a backstop at the larger of the two limits.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from swival.errors import ModelNotFound, ProviderError
from swival.providers.assembly import StreamAssembly
from swival.providers.base import ChatRequest, ProviderInfo, StreamItem, TextChunk
from swival.providers.bodylines import BodyTooLarge, body_lines
from swival.providers.http import is_loopback, tls_message
from swival.providers.overflow import classify_overflow
from swival.providers.replies import error_detail, retry_after, short, status_reason
from swival.providers.streaming import RetryPolicy, StreamingProvider, Transient

if TYPE_CHECKING:
    import httpx

CONNECT_TIMEOUT = 10.0  # seconds; a local server accepts in milliseconds, a LAN one in less
WRITE_TIMEOUT = 60.0
ERROR_BODY_LIMIT = 64_000  # bytes of an error reply kept for classification


@dataclass(frozen=True)
class Limits:
    """The two per-attempt limits, in seconds (see the module docstring)."""

    first: float = 900.0
    idle: float = 600.0


def limit_message(limits: Limits, started: bool) -> str:
    """What a person is told about the limit that ended an attempt: `idle` once the reply
    had started (`started`), else `first`."""
    if started:
        return f"no new data for {limits.idle:g} s (idle_timeout)"
    return f"the reply did not start within {limits.first:g} s (request_timeout)"


class Watchdog:
    """Shuts a request's socket down when its reply stops making progress (see the module
    docstring). It runs from before the request is sent, so the wait for the response
    headers is bounded too; it learns the socket from httpcore's `trace` extension."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self.expired: str | None = None
        self._started = False
        self._deadline = clock() + limits.first
        self._sock: socket.socket | None = None
        self._stopped = False
        self._wake = threading.Event()  # stop(), or a deadline moved earlier
        threading.Thread(target=self._run, name="swival-watchdog", daemon=True).start()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: keep the socket of the connection the request opens."""
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            self._sock = stream.get_extra_info("socket") if stream is not None else None

    def progress(self) -> None:
        """A new piece of the reply arrived: the idle limit starts again."""
        before = self._deadline
        self._started = True
        self._deadline = self.clock() + self.limits.idle
        if self._deadline < before:  # the thread sleeps until `before`: wake it
            self._wake.set()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            remaining = self._deadline - self.clock()
            if remaining <= 0:
                self._expire()
                return
            self._wake.wait(remaining)
            self._wake.clear()  # the loop re-reads the deadline and the stop flag

    def _expire(self) -> None:
        self.expired = limit_message(self.limits, self._started)
        if self._sock is not None:
            with contextlib.suppress(OSError):  # already closed: nothing left to stop
                self._sock.shutdown(socket.SHUT_RDWR)


class OpenReply:
    """A streamed reply whose headers have arrived. Use as a context manager."""

    def __init__(self, response: httpx.Response, watchdog: Watchdog) -> None:
        self.response = response
        self.watchdog = watchdog

    @property
    def status(self) -> int:
        return self.response.status_code

    def retry_after(self) -> float | None:
        return retry_after(self.response.headers.get("retry-after"))

    def error_text(self) -> str:
        """The body of an error reply (bounded), as text."""
        data = b""
        for piece in self.response.iter_bytes():
            data += piece
            if len(data) >= ERROR_BODY_LIMIT:
                break
        return data.decode("utf-8", "replace")

    def lines(self, progress: Callable[[], int]) -> Iterator[str]:
        """The body's lines. `progress()` is read after each line is handled; when it grew,
        the line carried a piece of the reply and the idle limit starts again."""
        seen = progress()
        for line in body_lines(self.response.iter_bytes()):
            yield line
            now = progress()
            if now != seen:
                seen = now
                self.watchdog.progress()

    def __enter__(self) -> OpenReply:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.watchdog.stop()
        self.response.close()


class HttpChannel:
    """One httpx client for one server. Thread-safe: the REPL warms it in the background."""

    def __init__(self, base_url: str, limits: Limits, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.limits = limits
        self.api_key = api_key
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Import httpx and build the client now (from a background thread at start-up)."""
        self.client()

    def client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                _import_httpx()
                import httpx

                read = max(self.limits.first, self.limits.idle)  # the watchdog is stricter
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                # A plain-HTTP URL never does TLS: skipping the CA bundle saves ~90 ms here.
                tls = self.base_url.startswith("https://")
                # One connection per request, so the watchdog always learns its socket;
                # connecting again costs microseconds next to a model call.
                self._client = httpx.Client(
                    timeout=httpx.Timeout(read, connect=CONNECT_TIMEOUT, write=WRITE_TIMEOUT,
                                          pool=CONNECT_TIMEOUT),
                    limits=httpx.Limits(max_keepalive_connections=0),
                    headers=headers, verify=tls, mounts=_direct_mounts(self.base_url))
            return self._client

    def post(self, path: str, body: dict[str, Any]) -> OpenReply:
        """Send `body` to `path` and wait for the reply's headers. Raises Transient for a
        refused connection (`refused=True`), a time limit or a dropped connection."""
        import httpx

        client = self.client()
        watchdog = Watchdog(self.limits)
        request = client.build_request("POST", self.base_url + path, json=body,
                                       extensions={"trace": watchdog.trace})
        try:
            response = client.send(request, stream=True)
        except BaseException as exc:  # Ctrl-C included: the watchdog must not linger
            watchdog.stop()
            tls = _tls_cause(exc)
            if tls is not None:
                raise ProviderError(tls_message(self.base_url, tls)) from None
            if isinstance(exc, httpx.ConnectError):
                raise Transient(f"cannot connect to {self.base_url}", refused=True) from None
            mapped = transport_error(exc, watchdog) if isinstance(exc, Exception) else None
            if mapped is None:
                raise
            raise mapped from None
        return OpenReply(response, watchdog)


def _tls_cause(exc: BaseException) -> ssl.SSLError | None:
    """The TLS failure (an untrusted certificate...) behind a failed connection, if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _direct_mounts(url: str) -> dict[str, None]:
    """httpx mounts that reach a server on this machine directly, whatever HTTP_PROXY says
    (http.py); a host mounted to None uses no proxy, as NO_PROXY does. Elsewhere the
    environment's proxy settings apply (as do SSL_CERT_FILE and SSL_CERT_DIR everywhere)."""
    if not is_loopback(url):
        return {}
    host = urlsplit(url).hostname or ""
    return {f"all://{'[' + host + ']' if ':' in host else host}": None}


# Held back while httpx and httpcore load, since the client never uses them: httpcore's
# support for async code under trio (which it imports whenever trio is installed) and
# httpx's command-line client (click, pygments, rich.progress). Loading them took about
# half of the client's set-up, which a request typed at once waits for.
HELD_BACK = ("trio", "httpx._main")


def _import_httpx() -> None:
    """Import httpx and httpcore without HELD_BACK. A None in sys.modules makes an import
    of that name fail, for the length of this import only; httpcore then leaves trio out
    and httpx its command line, as they do where those are not installed."""
    if "httpx" in sys.modules and "httpcore" in sys.modules:
        return
    held = [name for name in HELD_BACK if name not in sys.modules]
    for name in held:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import httpcore  # noqa: F401
        import httpx  # noqa: F401
    finally:
        for name in held:
            del sys.modules[name]


def transport_error(exc: Exception, watchdog: Watchdog | None) -> Transient | None:
    """The Transient for an httpx failure (None if `exc` is not one): the limit the watchdog
    enforced, or the failure itself."""
    import httpx

    if not isinstance(exc, httpx.TransportError):
        return None
    if watchdog is not None and watchdog.expired:
        return Transient(watchdog.expired)
    if isinstance(exc, httpx.TimeoutException):
        return Transient("the server sent nothing for too long")
    return Transient("the connection dropped")


class DirectProvider(StreamingProvider):
    """A server reached directly over httpx. Subclasses give the path, the request body, a
    line decoder for their wire format, and how a missing model is reported."""

    path = ""

    def __init__(self, info: ProviderInfo, policy: RetryPolicy, channel: HttpChannel) -> None:
        super().__init__(info, policy)
        self.channel = channel

    def warm(self) -> None:
        self.channel.warm()

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _decoder(self, request: ChatRequest, assembly: StreamAssembly) -> Callable[[str], str]:
        """A function taking one line of the body and returning the visible text it adds;
        it raises Transient or ProviderError for an error the server reports mid-stream."""
        raise NotImplementedError

    def _missing_model(self, detail: str) -> Exception:
        said = f": {short(detail, 200)}" if detail.strip() else ""
        return ModelNotFound(
            f"{self.info.base_url} has no model {self.info.model!r} (HTTP 404{said}). Load it "
            "on the server, or pass one the server lists with --model (/model in the REPL "
            "lists them)."
        )

    def _attempt(self, request: ChatRequest) -> Iterator[StreamItem]:
        assembly = StreamAssembly()
        reply: OpenReply | None = None
        try:
            with self.channel.post(self.path, self._body(request)) as reply:
                if reply.status != 200:
                    raise self._http_error(request, reply.status, reply.error_text(),
                                           reply.retry_after())
                if "html" in reply.response.headers.get("content-type", "").lower():
                    raise self._not_a_model("answered with a web page (text/html)")
                decode = self._decoder(request, assembly)
                for line in reply.lines(lambda: assembly.progress):
                    text = decode(line)
                    if text:
                        yield TextChunk(text)
                    if assembly.ended:
                        break
        except BodyTooLarge as exc:
            raise self._not_a_model(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - only httpx failures are mapped here
            mapped = transport_error(exc, reply.watchdog if reply is not None else None)
            if mapped is None:
                raise
            raise mapped from None
        assert reply is not None
        if reply.watchdog.expired:  # a body without framing simply ends when cut
            raise Transient(reply.watchdog.expired)
        if not assembly.finished and assembly.has_content:
            raise Transient("the stream ended before the reply was complete")
        rest = assembly.flush()
        if rest:
            yield TextChunk(rest)
        yield assembly.completion()

    def _not_a_model(self, what: str) -> ProviderError:
        """The server at the base URL replied with something that is no chat reply."""
        return ProviderError(
            f"{self.info.base_url} {what}, not a chat reply: it does not look like a model "
            "server's API. Check that --base-url is the model server's address and "
            "--provider its kind.")

    def _http_error(self, request: ChatRequest, status: int, body: str,
                    wait: float | None) -> Exception:
        detail = error_detail(body)
        overflow = classify_overflow(request, self.info.window.tokens, error_text=body)
        if overflow is not None:
            return overflow
        if status == 429 or status >= 500:
            return Transient(status_reason(status), detail=short(detail), retry_after=wait)
        if status in (401, 403):
            return ProviderError(
                f"{self.info.base_url} refused the request (HTTP {status}: {short(detail)}). "
                "Pass the server's key with --api-key (or api_key in swival.toml)."
            )
        if status == 404:
            return self._missing_model(detail)
        return ProviderError(f"The server rejected the request (HTTP {status}): "
                             f"{short(detail)}")


def stream_error(error: Any, request: ChatRequest, window: int | None) -> Exception:
    """An error the server reported inside the stream: an overflow, a transient failure
    (a 429/5xx code or a server-side type), or a plain ProviderError."""
    text = json.dumps(error) if not isinstance(error, str) else error
    overflow = classify_overflow(request, window, error_text=text)
    if overflow is not None:
        return overflow
    code = error.get("code") if isinstance(error, dict) else None
    kind = str(error.get("type", "")) if isinstance(error, dict) else ""
    if (isinstance(code, int) and (code == 429 or code >= 500)) or "server" in kind:
        return Transient("the server failed mid-reply", detail=short(error_detail(text)))
    return ProviderError(f"The server reported an error: {short(error_detail(text))}")
