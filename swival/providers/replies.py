"""What a model server's replies say, in a person's words: the message inside an error
body, a retried status, a Retry-After header, a text made short. Shared by the direct
transports and the hosted one."""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Callable


def retry_after(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a Retry-After header: a number of seconds or an HTTP date.
    None for anything else (`nan`, `-5`, `inf`): the usual backoff applies then."""
    if not value:
        return None
    value = value.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now())


def error_detail(body: str) -> str:
    """The message inside an error body (`{"error": {"message": ...}}`, `{"error": "..."}`),
    or the body itself."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def status_reason(status: int) -> str:
    """A retried HTTP status, as a person is told of it."""
    return f"rate limited (HTTP {status})" if status == 429 else f"server error (HTTP {status})"


def short(text: str, limit: int = 300) -> str:
    """`text` on one line, at most `limit` characters, cut between words."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
