"""Turning a fetched body into text for the model: HTML becomes Markdown of the main
content (navigation, sidebars, footers, scripts dropped), JSON is re-indented compactly,
plain text passes through, anything else is refused with its content type.

HTML extraction uses trafilatura (see docs/safety.md for why); it takes ~0.15 s to
import, so it is imported here, on the first page converted, never at start-up.
"""

from __future__ import annotations

import codecs
import html
import json
import logging
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from swival.tools.output import looks_binary

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({
    "application/javascript", "application/ecmascript", "application/xml",
    "application/yaml", "application/x-yaml", "application/toml", "application/sql",
    "application/x-sh", "application/x-ndjson", "application/graphql",
})
UNTYPED = frozenset({"", "application/octet-stream", "binary/octet-stream"})
META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""",
                          re.IGNORECASE)
TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"))


class NotText(Exception):
    """The body is not text; the message is its content type."""


@dataclass(frozen=True)
class Page:
    """Converted text, what it was converted from, and the page title when known."""

    text: str
    form: str  # "Markdown from HTML", "JSON", "text"
    title: str = ""


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def kind_of(content_type: str, raw: bytes) -> str:
    """"html", "json" or "text"; raises NotText for binary content."""
    media = media_type(content_type)
    if media in UNTYPED:
        if looks_binary(raw):
            raise NotText(media or "no content type, binary data")
        return "html" if _looks_html(raw) else "text"
    if media in HTML_TYPES:
        kind = "html"
    elif media == "application/json" or media.endswith("+json"):
        kind = "json"
    elif media.startswith("text/") or media in TEXT_TYPES or media.endswith("+xml"):
        kind = "text"
    else:
        raise NotText(media)
    if looks_binary(raw):
        raise NotText(f"{media}, but the data is binary")
    return kind


def _looks_html(raw: bytes) -> bool:
    return raw[:512].lstrip().lower().startswith((b"<!doctype html", b"<html"))


def declared_charset(content_type: str, raw: bytes, kind: str) -> str | None:
    """The charset the header declares, else (for HTML) the page's own <meta>, if known
    to Python."""
    found = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", content_type, re.IGNORECASE)
    name = found.group(1) if found else None
    if name is None and kind == "html":
        meta = META_CHARSET.search(raw[:4096])
        name = meta.group(1).decode("ascii") if meta else None
    if name is None:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode(raw: bytes, content_type: str, kind: str) -> str:
    """Text by the byte-order mark, the declared charset, UTF-8, or detection, in that
    order; undecodable bytes become U+FFFD rather than failing the fetch. A page said
    to be UTF-8 (or ASCII) that is not (a Latin-1 page served with the server's default
    charset=utf-8) is detected like one that declares nothing."""
    for bom, codec in BOMS:
        if raw.startswith(bom):
            return raw.decode(codec, errors="replace")
    declared = declared_charset(content_type, raw, kind)
    if declared and declared not in ("utf-8", "ascii"):
        return raw.decode(declared, errors="replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(raw) - 3:  # a download cut inside the last character
            return raw[: exc.start].decode("utf-8")
    from charset_normalizer import from_bytes

    found = from_bytes(raw)
    best = found.best()
    # On short Western text the detector's first guess is often another Latin code page
    # (cp1257 for French); like browsers, prefer windows-1252 when it reads as cleanly.
    western = next((match for match in found if match.encoding == "cp1252"), None)
    if best is not None and western is not None and western.chaos <= best.chaos + 0.1:
        best = western
    return str(best) if best is not None else raw.decode("utf-8", errors="replace")


def html_to_markdown(page: str, url: str) -> str:
    """The page's main content as Markdown (links and tables kept), or all its text when
    no main content is found."""
    import trafilatura

    # trafilatura reports pages it cannot parse through logging; with no handler set,
    # Python would print those on the user's terminal.
    log = logging.getLogger("trafilatura")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    log.propagate = False
    text = trafilatura.extract(
        page, url=url, output_format="markdown", include_links=True, include_tables=True,
        include_formatting=True, include_images=False, include_comments=False,
        favor_recall=True,
    )
    return text or trafilatura.html2txt(page) or _fragment_text(page)


class _Text(HTMLParser):
    """The text of an HTML fragment, without scripts, styles, templates and title."""

    SKIPPED = frozenset({"script", "style", "noscript", "template", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self._skipping += tag in self.SKIPPED

    def handle_endtag(self, tag: str) -> None:
        self._skipping -= tag in self.SKIPPED and self._skipping > 0

    def handle_data(self, data: str) -> None:
        if not self._skipping and data.strip():
            self.parts.append(" ".join(data.split()))


def _fragment_text(page: str) -> str:
    """The words of what trafilatura finds nothing in: a fragment such as `<p>hi</p>`,
    which servers send for partial page updates; "" when there are none."""
    parser = _Text()
    parser.feed(page)
    parser.close()
    return "\n".join(parser.parts)


def page_title(page: str) -> str:
    found = TITLE.search(page[:65536])
    return " ".join(html.unescape(found.group(1)).split())[:200] if found else ""


def convert(raw: bytes, content_type: str, url: str) -> Page:
    """The text the model gets for a body; raises NotText for binary content."""
    kind = kind_of(content_type, raw)
    text = decode(raw, content_type, kind).replace("\r\n", "\n")
    if kind == "html":
        return Page(html_to_markdown(text, url), "Markdown from HTML", page_title(text))
    if kind == "json":
        try:
            value = json.loads(text)
        except ValueError:
            if _looks_html(raw):  # an HTML page (a login or error page) sent as JSON
                return Page(html_to_markdown(text, url), "Markdown from HTML (not JSON)",
                            page_title(text))
            return Page(text, "text (not valid JSON)")
        return Page(json.dumps(value, indent=1, ensure_ascii=False), "JSON")
    return Page(text, "text")
