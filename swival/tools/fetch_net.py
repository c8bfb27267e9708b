"""The HTTP client behind fetch_url: httpx on an httpcore connection pool whose network
backend resolves every host itself, has the fetch policy check each address, and then
connects to a checked address, never to the name. So a DNS answer cannot change between
the check and the connection, and no connection of any hop escapes the check.

Imported only when fetch_url runs (httpx and its TLS setup stay off the start-up path).
Every failure leaves here as `FetchFailed` (a message for the model) or `FetchRefused`
(the policy's reason).
"""

from __future__ import annotations

import contextlib
import ipaddress
import queue
import socket
import threading
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

from swival import __version__
from swival.tools.fetch_policy import FetchPolicy, Network

USER_AGENT = f"swival/{__version__} (fetch_url)"
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.5"
ENCODINGS = "gzip, deflate"  # those body_chunks decodes, each within the size limit


class FetchFailed(Exception):
    """The fetch could not be done; the message says why, for the model."""


class FetchRefused(Exception):
    """The fetch policy refused a connection; the message is the policy's reason."""


class SystemNetwork:
    """The real network: the system resolver (bounded by a timeout) and TCP sockets."""

    def resolve(self, host: str, port: int, timeout: float) -> list[str]:
        try:
            ipaddress.ip_address(host)
            return [host]
        except ValueError:
            pass
        answers: queue.Queue[Any] = queue.Queue(maxsize=1)

        def lookup() -> None:
            try:
                answers.put(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
            except Exception as exc:  # reported by the caller, never by the thread
                answers.put(exc)

        # A resolver that never answers must not hold the turn: the daemon thread is
        # abandoned at the deadline.
        threading.Thread(target=lookup, name="swival-resolve", daemon=True).start()
        try:
            found = answers.get(timeout=timeout)
        except queue.Empty:
            raise OSError(f"no answer from the name resolver within {timeout:g} s") from None
        if isinstance(found, OSError):
            raise found
        if isinstance(found, Exception):  # e.g. a label IDNA cannot encode
            raise OSError(f"not a valid host name: {found}")
        return list(dict.fromkeys(str(info[4][0]) for info in found))

    def connect(self, address: str, port: int, timeout: float | None) -> Any:
        return httpcore.SyncBackend().connect_tcp(address, port, timeout=timeout)


class GuardedBackend(httpcore.NetworkBackend):
    """Resolve, check every address with the policy, connect to the first that answers."""

    def __init__(self, policy: FetchPolicy, network: Network, resolve_timeout: float) -> None:
        self.policy = policy
        self.network = network
        self.resolve_timeout = resolve_timeout

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        try:
            addresses = self.network.resolve(host, port, self.resolve_timeout)
        except OSError as exc:
            raise FetchFailed(
                f"cannot resolve {host} ({_reason(exc)}): the name may be wrong, or this "
                "machine may be offline. Check the URL; if it is right, the network is "
                "unavailable, so continue without it."
            ) from None
        if not addresses:
            raise FetchFailed(f"{host} resolves to no address.")
        refusal = self.policy.check_addresses(host, port, addresses)
        if refusal:
            raise FetchRefused(refusal)
        failure: Exception | None = None
        for address in addresses:
            try:
                stream: httpcore.NetworkStream = self.network.connect(address, port, timeout)
                return stream
            except (httpcore.ConnectError, httpcore.ConnectTimeout, OSError) as exc:
                failure = exc
        raise FetchFailed(f"cannot connect to {host} port {port}: {_reason(failure)}.")

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        raise FetchFailed("unix sockets are not fetched.")


def _reason(exc: BaseException | None) -> str:
    if isinstance(exc, socket.gaierror | OSError) and exc.strerror:
        return exc.strerror
    text = str(exc or "").strip()
    if "timed out" in text.lower() or isinstance(exc, httpcore.TimeoutException):
        return "timed out"
    return text or type(exc).__name__


@contextlib.contextmanager
def translated(where: str) -> Iterator[None]:
    """Turn httpcore's and httpx's exceptions into FetchFailed with a plain reason."""
    try:
        yield
    except (FetchFailed, FetchRefused):
        raise
    except (httpx.InvalidURL, UnicodeError) as exc:
        raise FetchFailed(f"{where}: not a valid URL ({exc}).") from None
    except (httpcore.ConnectTimeout, httpx.ConnectTimeout):
        raise FetchFailed(f"connecting to {where} timed out.") from None
    except (httpcore.ReadTimeout, httpx.ReadTimeout):
        raise FetchFailed(f"{where} stopped sending data (idle timeout).") from None
    except (httpcore.TimeoutException, httpx.TimeoutException) as exc:
        raise FetchFailed(f"talking to {where} timed out ({exc or 'timeout'}).") from None
    except (httpcore.ConnectError, httpx.ConnectError) as exc:
        raise FetchFailed(f"cannot connect to {where}: {exc}.") from None
    except (httpcore.RemoteProtocolError, httpx.RemoteProtocolError) as exc:
        raise FetchFailed(f"{where} broke the HTTP protocol or closed the connection "
                          f"early ({exc}).") from None
    except (httpcore.NetworkError, httpcore.ProtocolError, httpx.HTTPError, OSError) as exc:
        raise FetchFailed(f"the request to {where} failed: {exc or type(exc).__name__}."
                          ) from None


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes], where: str) -> None:
        self.stream = stream
        self.where = where

    def __iter__(self) -> Iterator[bytes]:
        with translated(self.where):
            yield from self.stream

    def close(self) -> None:
        close = getattr(self.stream, "close", None)
        if close:
            close()


class GuardedTransport(httpx.BaseTransport):
    """httpx transport over a connection pool that uses `GuardedBackend`."""

    def __init__(self, backend: GuardedBackend) -> None:
        self.pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=backend,
            max_connections=4, retries=0,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port,
                             target=url.raw_path),
            headers=request.headers.raw, content=request.stream,
            extensions=request.extensions,
        )
        with translated(url.host):
            response = self.pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_Body(response.stream, url.host),
                              extensions=response.extensions)

    def close(self) -> None:
        self.pool.close()


def open_client(policy: FetchPolicy, network: Network | None, idle: float,
                connect: float) -> httpx.Client:
    """A client for one fetch: no redirects followed (the caller checks each hop), no
    proxies or .netrc from the environment, `idle` seconds allowed between reads."""
    backend = GuardedBackend(policy, network or SystemNetwork(), resolve_timeout=connect)
    return httpx.Client(
        transport=GuardedTransport(backend), follow_redirects=False, trust_env=False,
        timeout=httpx.Timeout(idle, connect=connect),
        headers={"User-Agent": USER_AGENT, "Accept": ACCEPT, "Accept-Encoding": ENCODINGS},
    )


def body_chunks(response: httpx.Response, max_bytes: int) -> Iterator[bytes]:
    """The body, decoded, in pieces that add up to at most `max_bytes` + 1 bytes (one
    more than allowed says it went on): decompression stops there, so a small body that
    expands to gigabytes (a gzip bomb) never takes more memory than the limit."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        yield from response.iter_raw()
        return
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise FetchFailed(f"the body is encoded as {encoding!r}, which fetch_url cannot "
                          "decode.")
    wbits = 31 if encoding != "deflate" else 15  # 31: gzip; 15: zlib (else raw deflate)
    inflater, started, left = zlib.decompressobj(wbits), False, max_bytes + 1
    ended = False  # a whole member came: what follows may be padding, not more members
    for data in response.iter_raw():
        while data and left > 0:
            try:
                piece = inflater.decompress(data, left)
            except zlib.error:
                if ended:
                    return
                if encoding == "deflate" and not started:  # deflate sent without a header
                    inflater, started = zlib.decompressobj(-15), True
                    continue
                raise FetchFailed(f"the body's {encoding} data is corrupt.") from None
            started, left = True, left - len(piece)
            yield piece
            data = inflater.unconsumed_tail
            if not data and inflater.eof:  # a gzip file of several members
                data, inflater, ended = inflater.unused_data, zlib.decompressobj(wbits), True
        if left <= 0:
            return
