"""fetch_url: one http(s) URL as text the model can read, within the fetch policy.

Each hop (the URL and up to 5 redirects) is approved by `ctx.fetch_policy` before its
request, and every address a host resolves to is checked again just before connecting
(swival/tools/fetch_net.py). At most 5 MB are downloaded and at most 30 s spent; a body
that stops arriving for 10 s ends the download. What was received is converted
(swival/tools/fetch_convert.py) and capped at `max_chars` (at most 50,000); a longer text
is saved under `.swival/out/` for read_file. The context engine then applies its
window-scaled cap like for every tool result.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from swival.messages import ToolResult
from swival.tools.approval import Refusal, person_words
from swival.tools.base import ToolContext, ToolError, ToolSpec
from swival.tools.fetch_policy import normalize_host
from swival.tools.spilled import head_or_spill
from swival.words import plural

if TYPE_CHECKING:
    import httpx

    from swival.tools.fetch_convert import Page

MB = 1024 * 1024
ERROR_EXCERPT = 1500


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int = 5 * MB  # raw download, after content decoding
    max_chars: int = 50_000  # converted text shown inline
    total_seconds: float = 30.0  # the whole fetch, redirects included
    idle_seconds: float = 10.0  # the longest wait for the next bytes
    connect_seconds: float = 10.0  # name lookup, then connecting
    max_redirects: int = 5


@dataclass(frozen=True)
class Fetched:
    url: str
    status: int
    reason: str
    content_type: str
    raw: bytes
    redirects: tuple[str, ...]
    stopped: str | None  # why the download ended early, if it did
    length: int | None = None  # the size the server declared (Content-Length), if any


class FetchUrl:
    """Fetch `url`; HTML comes back as Markdown of its main content."""

    read_only = True
    spec = ToolSpec(
        name="fetch_url",
        description="Fetch an http(s) URL as Markdown or text.",
        parameters={
            "type": "object",
            "properties": {"url": {"type": "string"}, "max_chars": {"type": "integer"}},
            "required": ["url"],
        },
    )

    def __init__(self, limits: FetchLimits | None = None) -> None:
        self.limits = limits or FetchLimits()

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        url = _check_url(args["url"])
        max_chars = args.get("max_chars") or self.limits.max_chars
        if max_chars < 1:
            raise ToolError("max_chars must be a positive number of characters.")
        # Imported when a fetch runs: nothing of the client is paid for at start-up.
        from swival.tools.fetch_convert import NotText, convert
        from swival.tools.fetch_net import FetchFailed, FetchRefused

        meta: dict[str, Any] = {"kind": "page", "path": url}
        try:
            fetched = self._fetch(url, ctx)
        except FetchRefused as refusal:
            meta["refused"], meta["summary"] = True, person_words(refusal.args[0])
            return ToolResult(f"fetch refused: {refusal}", is_error=True, meta=meta)
        except FetchFailed as failure:
            return ToolResult(f"fetch failed: {failure}", is_error=True, meta=meta)
        meta["path"] = fetched.url
        meta["summary"] = f"HTTP {fetched.status}, {plural(len(fetched.raw), 'byte')}"
        if fetched.stopped:  # the person sees why the body is short or missing
            meta["summary"] += f"; {fetched.stopped}"
        if fetched.stopped and not fetched.raw:
            return ToolResult(f"fetch failed: {fetched.stopped}; nothing of the body arrived.",
                              is_error=True, meta=meta)
        try:
            page = convert(fetched.raw, fetched.content_type, fetched.url)
        except NotText as exc:
            return _binary(fetched, str(exc), meta)
        text = _header(fetched, page) + (page.text.strip() or _empty(fetched))
        if fetched.status >= 400:
            cut = text[:ERROR_EXCERPT] + ("\n[…]" if len(text) > ERROR_EXCERPT else "")
            return ToolResult(f"fetch failed: HTTP {fetched.status} {fetched.reason}\n{cut}",
                              is_error=True, meta=meta)
        shown, saved = head_or_spill(text + "\n", min(max_chars, self.limits.max_chars), ctx,
                                     "fetch", "page")
        return ToolResult(shown, meta={**meta, **saved})

    def _fetch(self, url: str, ctx: ToolContext) -> Fetched:
        from swival.tools.fetch_convert import NotText, kind_of
        from swival.tools.fetch_net import open_client, translated

        limits = self.limits
        deadline = time.monotonic() + limits.total_seconds
        with open_client(ctx.fetch_policy, ctx.network, limits.idle_seconds,
                         limits.connect_seconds) as client, translated(urlsplit(url).netloc):
            response, hops = _follow(client, url, ctx.fetch_policy, limits)
            try:
                content_type = response.headers.get("content-type", "")
                try:
                    kind_of(content_type, b"")  # refuse binary before downloading it
                except NotText:
                    raw, stopped = b"", None
                else:
                    raw, stopped = _read(response, limits, deadline)
            finally:
                response.close()
            declared = response.headers.get("content-length", "")
            return Fetched(str(response.url), response.status_code, response.reason_phrase,
                           content_type, raw, tuple(hops), stopped,
                           int(declared) if declared.isdigit() else None)


def _check_url(url: str) -> str:
    url = url.strip()
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ToolError(f"{url[:100]!r} is not a valid URL ({exc}).") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ToolError(f"only http and https URLs can be fetched, not {url[:100]!r}. "
                        "For a local file use read_file.")
    if not host:
        raise ToolError(f"the URL {url[:100]!r} has no host name.")
    return url


def _follow(client: httpx.Client, url: str, policy: Any,
            limits: FetchLimits) -> tuple[httpx.Response, list[str]]:
    """Send the request and each redirect after approving its hop; return the first
    response that is not a redirect and the URLs that redirected to it."""
    from swival.tools.fetch_net import FetchFailed, FetchRefused

    hops: list[str] = []
    location = ""
    request = client.build_request("GET", url)
    for _ in range(limits.max_redirects + 1):
        target = request.url
        if target.scheme not in ("http", "https"):
            # As the server wrote it: httpx puts the request's host into file:///x.
            said = location or str(target)
            raise FetchRefused(Refusal(
                f"{hops[-1]} redirects to {said[:200]}, which is not an http(s) URL; only "
                "those are fetched. For a local file use read_file.",
                f"not fetched: it redirects to a {target.scheme} URL"))
        host = normalize_host(target.host)
        port = target.port or (443 if target.scheme == "https" else 80)
        via = f" (reached through a redirect from {hops[-1]})" if hops else ""
        refusal = policy.approve(str(target), host, port)
        if refusal:
            raise FetchRefused(Refusal(f"{refusal}{via}", person_words(refusal)))
        try:
            response = client.send(request, stream=True)
        except FetchRefused as exc:  # an address the name resolved to
            raise FetchRefused(Refusal(f"{exc}{via}", person_words(exc.args[0]))) from None
        if response.next_request is None:
            return response, hops
        response.close()
        hops.append(str(target))
        location = response.headers.get("location", "")
        request = response.next_request
    raise FetchFailed(f"more than {limits.max_redirects} redirects, the last to "
                      f"{request.url}; fetch that URL directly if it is the right one.")


def _read(response: httpx.Response, limits: FetchLimits,
          deadline: float) -> tuple[bytes, str | None]:
    """The body, up to the size and time limits, and why it stopped early (or None)."""
    from swival.tools.fetch_net import FetchFailed, body_chunks

    body = bytearray()
    stopped = None
    try:
        for chunk in body_chunks(response, limits.max_bytes):
            body += chunk
            if len(body) >= limits.max_bytes:
                stopped = f"the download stopped at the {limits.max_bytes // MB} MB limit"
                break
            if time.monotonic() > deadline:
                stopped = (f"the page was still arriving after {limits.total_seconds:g} s, "
                           "the time allowed for one fetch")
                break
    except FetchFailed as exc:
        stopped = str(exc).rstrip(".")
    return bytes(body[: limits.max_bytes]), stopped


def _header(fetched: Fetched, page: Page) -> str:
    from swival.tools.fetch_convert import media_type

    media = media_type(fetched.content_type) or "no content type"
    lines = [f"Fetched {fetched.url} (HTTP {fetched.status}, {media} as {page.form}, "
             f"{len(fetched.raw)} bytes)"]
    if fetched.redirects:
        lines.append("Redirected from: " + " -> ".join(fetched.redirects))
    if page.title:
        lines.append(f"Title: {page.title}")
    if fetched.stopped:
        lines.append(f"[incomplete: {fetched.stopped}; what follows is the first "
                     f"{len(fetched.raw)} bytes only]")
    return "\n".join(lines) + "\n\n"


def _empty(fetched: Fetched) -> str:
    if not fetched.raw:
        return "[the body is empty]"
    return ("[no readable text: the page may build its content with JavaScript; look for "
            "an API, a raw or plain-text version of it]")


def _binary(fetched: Fetched, what: str, meta: dict[str, Any]) -> ToolResult:
    """The refusal of a body that is not text (left undownloaded when its type said so),
    summed up for the person as what it is and how big."""
    size = fetched.length if fetched.length is not None else len(fetched.raw) or None
    said = what if size is None else f"{what}, {_size(size)}"
    meta = {**meta, "refused": True, "summary": f"not text ({said})"}
    return ToolResult(
        f"fetch refused: {fetched.url} is not text ({what}); fetch_url returns text only. "
        "To get the file itself, ask the user to download it (or use run_command with "
        "curl if commands are allowed).",
        is_error=True, meta=meta,
    )


def _size(count: int) -> str:
    """A size for people: bytes under 1 KB, else KB or MB with at most one decimal."""
    if count < 1024:
        return plural(count, "byte")
    kb = count / 1024
    value, unit = (kb, "KB") if kb < 1024 else (kb / 1024, "MB")
    return f"{value:.1f}".removesuffix(".0") + f" {unit}"
