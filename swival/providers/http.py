"""Small JSON-over-HTTP helpers for discovery probes (standard library only, short timeouts).

Discovery runs before the first model call and must stay fast and light: no litellm, no
client objects, one short request per probe.

A server on this machine (a loopback address or `localhost`) is always reached directly:
proxy variables such as HTTP_PROXY are meant for the outside world, and a proxy cannot reach
our loopback anyway. Other URLs follow the environment (HTTP_PROXY, NO_PROXY) as usual.
"""

from __future__ import annotations

import ipaddress
import json
import ssl
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

PROBE_TIMEOUT = 2.5  # seconds; a local server answers these in milliseconds
# The most of a reply read: a model list or a token list is well below it, and a server
# that sends gigabytes must not fill the memory.
PROBE_BODY_LIMIT = 16 * 1024 * 1024


class ProbeError(Exception):
    """A probe failed. `status` is the HTTP status, or None when nothing answered (or, with
    `tls` set, when the server's TLS certificate could not be verified)."""

    def __init__(self, url: str, status: int | None, detail: str, *, tls: bool = False) -> None:
        super().__init__(f"{url}: {detail}")
        self.url = url
        self.status = status
        self.detail = detail
        self.tls = tls

    @property
    def unreachable(self) -> bool:
        return self.status is None


def is_loopback(url: str) -> bool:
    """Whether `url` names this machine (127.0.0.0/8, ::1 or localhost)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_message(url: str, error: ssl.SSLError) -> str:
    """What a person is told when a server's TLS certificate is not trusted."""
    reason = getattr(error, "verify_message", None) or error.reason or str(error)
    root = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
    return (f"{root} answered, but its TLS certificate could not be verified ({reason}). "
            "For a server with a self-signed certificate, point SSL_CERT_FILE at that "
            "certificate or its CA (SSL_CERT_FILE=/path/to/cert.pem swival ...), or use the "
            "server's http:// URL if it offers one.")


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def fetch_json(
    url: str,
    *,
    body: dict[str, Any] | None = None,
    api_key: str | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> Any:
    """GET `url` (or POST `body` as JSON) and return the parsed JSON reply.

    Raises ProbeError: status None when the server could not be reached or timed out, the
    HTTP status for an error reply, 200 for a reply that is not JSON or is longer than
    PROBE_BODY_LIMIT.
    """
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=_headers(api_key))
    try:
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        opener = direct.open if is_loopback(url) else urllib.request.urlopen
        with opener(req, timeout=timeout) as resp:
            raw = resp.read(PROBE_BODY_LIMIT + 1)
    except urllib.error.HTTPError as exc:
        text = exc.read(2000).decode("utf-8", "replace")[:500]
        raise ProbeError(url, exc.code, f"HTTP {exc.code}: {text}") from None
    except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, ssl.SSLError):
            raise ProbeError(url, None, tls_message(url, reason), tls=True) from None
        raise ProbeError(url, None, f"no answer ({reason})") from None
    if len(raw) > PROBE_BODY_LIMIT:
        raise ProbeError(url, 200, f"the reply is longer than {PROBE_BODY_LIMIT // 2**20} MB")
    try:
        return json.loads(raw)
    except ValueError:
        raise ProbeError(url, 200, "the reply is not JSON") from None
