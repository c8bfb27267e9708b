"""Small JSON-over-HTTP helpers for discovery probes (standard library only, short timeouts).

Discovery runs before the first model call and must stay fast and light: no litellm, no
client objects, one short request per probe.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

PROBE_TIMEOUT = 2.5  # seconds; a local server answers these in milliseconds
# The most of a reply read: a model list or a token list is well below it, and a server
# that sends gigabytes must not fill the memory.
PROBE_BODY_LIMIT = 16 * 1024 * 1024


class ProbeError(Exception):
    """A probe failed. `status` is the HTTP status, or None when nothing answered."""

    def __init__(self, url: str, status: int | None, detail: str) -> None:
        super().__init__(f"{url}: {detail}")
        self.url = url
        self.status = status
        self.detail = detail

    @property
    def unreachable(self) -> bool:
        return self.status is None


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
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read(PROBE_BODY_LIMIT + 1)
    except urllib.error.HTTPError as exc:
        text = exc.read(2000).decode("utf-8", "replace")[:500]
        raise ProbeError(url, exc.code, f"HTTP {exc.code}: {text}") from None
    except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ProbeError(url, None, f"no answer ({reason})") from None
    if len(raw) > PROBE_BODY_LIMIT:
        raise ProbeError(url, 200, f"the reply is longer than {PROBE_BODY_LIMIT // 2**20} MB")
    try:
        return json.loads(raw)
    except ValueError:
        raise ProbeError(url, 200, "the reply is not JSON") from None
