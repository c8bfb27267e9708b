"""A loopback web server for fetch_url tests, and a network that plays public hosts on it.

    with WebServer() as web:
        web.url("/article")            # http://127.0.0.1:PORT/article
        web.paths                      # every path requested, in order

Pages (GET):
    /article        a blog post wrapped in navigation, sidebar, cookie banner, comments,
                    footer and scripts; the article holds MARKER-ONE..THREE, the
                    boilerplate holds BOILERPLATE-<PART>
    /docs           a documentation page built from divs (no <main>/<article>)
    /index          a directory listing: the links are the content
    /js-app         an HTML shell whose content a script would build
    /text, /empty   plain text; an empty 200
    /json, /bad-json
    /latin1         ISO-8859-1, declared in the Content-Type header
    /meta-cp1251    windows-1251, declared only in a <meta> tag
    /sniff-cp1251   windows-1251, declared nowhere (the charset must be detected)
    /latin1-said-utf8, /cp1251-said-utf8   not UTF-8, though the header says so
    /gzip           the article, gzip-encoded
    /bomb           64 MB of text sent as a gzip body of about 60 KB
    /deflate, /raw-deflate, /two-members, /corrupt-gzip, /brotli   encoded bodies
    /image          a PNG;  /octet  untyped binary;  /octet-text  untyped text
    /404, /500      error pages
    /big            20 MB of text
    /slow           one line every 0.1 s, for up to 20 s
    /stall          headers, then nothing for up to 20 s
    /silent         not even headers, for up to 20 s
    /secret         what request forgery would steal: SECRET-VALUE
    /fragment       an HTML fragment (no <html>, <body>), as partial-update endpoints send
    /png-as-html    a PNG sent as text/html
    /html-as-json   the article sent as application/json
    /redirect?to=URL[&code=N]   a redirect to URL
    /chain/N        N redirects in a row, ending at /article

Every handler stops by itself and when the client hangs up.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import socket
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from swival.tools.fetch_net import SystemNetwork

NAV = "".join(f'<li><a href="/s/{i}">Menu entry {i} BOILERPLATE-NAV</a></li>' for i in range(60))
SIDE = "".join(f'<li><a href="/t/{i}">Related story {i}</a></li>' for i in range(25))
FOOT = "".join(f'<a href="/legal/{i}">Legal link {i}</a> ' for i in range(30))
LONG = " ".join(["The merge order is defaults, global file, project file, environment "
                 "and command line."] * 6)
ARTICLE = f"""
<h1>Parsing configuration files safely</h1>
<p>The loader reads <code>settings.toml</code> once and validates every key. MARKER-ONE.</p>
<h2>Why validation matters</h2>
<p>Unknown keys are reported with a suggestion. See <a href="https://docs.example.org/config">
the reference</a> for every key.</p>
<pre><code>def load(path):
    data = tomllib.loads(path.read_text())
    return validate(data)
</code></pre>
<ul><li>unknown keys are errors</li><li>wrong types are errors</li></ul>
<table><tr><th>key</th><th>default</th></tr><tr><td>max_turns</td><td>100</td></tr></table>
<p>{LONG} MARKER-TWO.</p>
<h2>Conclusion</h2><p>Validate early, fail loudly, and say what to do. MARKER-THREE.</p>
"""
ARTICLE_PAGE = f"""<!doctype html><html><head><meta charset="utf-8">
<title>Parsing configuration files safely - Example Blog</title>
<style>body {{ font-family: sans-serif }}</style>
<script>function track() {{ console.log('BOILERPLATE-SCRIPT') }}</script></head>
<body><div id="cookie-banner">We use cookies BOILERPLATE-COOKIE. <button>OK</button></div>
<header><a href="/">Example Blog</a><nav><ul>{NAV}</ul></nav></header>
<div class="layout"><aside class="sidebar"><h3>Related BOILERPLATE-SIDEBAR</h3>
<ul>{SIDE}</ul></aside>
<main><article>{ARTICLE}</article>
<section class="comments"><h3>Comments</h3><p>Great post! BOILERPLATE-COMMENT</p></section>
</main></div>
<footer><p>Copyright 2025 BOILERPLATE-FOOTER</p>{FOOT}<form><input name="email"></form>
</footer><script>track();</script></body></html>"""
DOCS_PAGE = f"""<html><head><title>os.path - Common pathname manipulations</title></head>
<body><div class="related"><h3>Navigation</h3><ul>{NAV}</ul></div>
<div class="sphinxsidebar"><h3>Contents BOILERPLATE-SIDEBAR</h3><ul>{SIDE}</ul></div>
<div class="document"><div class="body" role="main">
<h1>os.path - Common pathname manipulations</h1>
<p>This module implements some useful functions on pathnames. MARKER-ONE.</p>
<dl><dt><code>os.path.join(path, *paths)</code></dt>
<dd><p>Join one or more path segments intelligently. MARKER-TWO.</p></dd></dl>
<pre>&gt;&gt;&gt; os.path.join("a", "b")
'a/b'</pre><p>Last paragraph. MARKER-THREE.</p></div></div>
<div class="footer">Copyright 2001 BOILERPLATE-FOOTER {FOOT}</div></body></html>"""
INDEX_PAGE = ("<html><head><title>Index of /pub</title></head><body><h1>Index of /pub</h1><ul>"
              + "".join(f'<li><a href="swival-{i}.tar.gz">swival-{i}.tar.gz</a> 12K</li>'
                        for i in range(20)) + "</ul></body></html>")
RUSSIAN = ("Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация "
           "южных губерний даст мощный толчок подъёму сельского хозяйства. ") * 4
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
BIG_BYTES = 20 * 1024 * 1024
BOMB_BYTES = 64 * 1024 * 1024
LIMIT_SECONDS = 20.0
_RAW_DEFLATE = zlib.compressobj(9, zlib.DEFLATED, -15)
# Bodies sent with a Content-Encoding: (encoding, body).
ENCODED: dict[str, tuple[str, bytes]] = {
    "/deflate": ("deflate", zlib.compress(b"zlib-wrapped MARKER-ONE\n")),
    "/raw-deflate": ("deflate", _RAW_DEFLATE.compress(b"raw MARKER-ONE\n") + _RAW_DEFLATE.flush()),
    "/two-members": ("gzip", gzip.compress(b"first MARKER-ONE\n") + gzip.compress(b"second\n")
                     + b"\0" * 16),  # and padding after them
    "/corrupt-gzip": ("gzip", b"\x1f\x8b\x08\x00 not really gzip"),
    "/brotli": ("br", b"\x0b\x02\x80MARKER-ONE\x03"),
}

STATIC: dict[str, tuple[str, bytes]] = {
    "/article": ("text/html; charset=utf-8", ARTICLE_PAGE.encode()),
    "/docs": ("text/html", DOCS_PAGE.encode()),
    "/index": ("text/html", INDEX_PAGE.encode()),
    "/js-app": ("text/html", b"<html><head><title>App</title><script src='/app.js'>"
                b"</script></head><body><div id='root'></div></body></html>"),
    "/text": ("text/plain; charset=utf-8", "line one\nline two ✓\n".encode()),
    "/empty": ("text/plain", b""),
    "/json": ("application/json", json.dumps(
        {"name": "swival", "tags": ["agent", "local"], "nested": {"ok": True, "n": 3}},
        separators=(",", ":")).encode()),
    "/bad-json": ("application/json", b"{'not': json,}"),
    "/latin1": ("text/html; charset=iso-8859-1",
                "<html><body><p>Café crème, naïve façade, déjà vu.</p></body></html>"
                .encode("latin-1")),
    "/meta-cp1251": ("text/html", (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
        f"</head><body><p>{RUSSIAN}</p></body></html>").encode("cp1251")),
    "/sniff-cp1251": ("text/plain", RUSSIAN.encode("cp1251")),
    # Pages whose header says UTF-8 (a server's default) and are not.
    "/latin1-said-utf8": ("text/html; charset=utf-8", (
        "<html><body><p>Café crème, naïve façade, déjà vu. Le garçon a mangé une crêpe à "
        "la fête.</p></body></html>").encode("cp1252")),
    "/cp1251-said-utf8": ("text/plain; charset=utf-8", RUSSIAN.encode("cp1251")),
    "/image": ("image/png", PNG),
    "/octet": ("application/octet-stream", PNG),
    "/octet-text": ("application/octet-stream", b"plain words in an untyped body\n"),
    "/secret": ("text/plain", b"SECRET-VALUE\n"),
    "/fragment": ("text/html", b"<p>Build 42 passed</p>"),  # trafilatura finds nothing
    "/png-as-html": ("text/html", PNG),  # a content type that lies
    "/html-as-json": ("application/json", ARTICLE_PAGE.encode()),  # another one
}


class WebServer:
    """Threaded loopback HTTP server on port 0; `paths` records every request path."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> WebServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(server: WebServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            server.paths.append(self.path)
            parts = urlsplit(self.path)
            # The client may stop reading early: that is what several tests want.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._route(parts.path, parse_qs(parts.query))

        def _route(self, path: str, query: dict[str, list[str]]) -> None:
            if path in STATIC:
                self._send(200, *STATIC[path])
            elif path in ENCODED:
                encoding, body = ENCODED[path]
                self._send(200, "text/plain", body, {"Content-Encoding": encoding})
            elif path == "/bomb":
                self._send(200, "text/plain", _bomb(), {"Content-Encoding": "gzip"})
            elif path == "/gzip":
                self._send(200, "text/html", gzip.compress(ARTICLE_PAGE.encode()),
                           {"Content-Encoding": "gzip"})
            elif path in ("/404", "/500"):
                code = int(path[1:])
                self._send(code, "text/html", f"<html><body><h1>Error {code}</h1><p>No such "
                           "page here.</p></body></html>".encode())
            elif path == "/redirect":
                code = int(query.get("code", ["302"])[0])
                self._send(code, "text/plain", b"", {"Location": query["to"][0]})
            elif path.startswith("/chain/"):
                left = int(path.rsplit("/", 1)[1])
                self._send(302, "text/plain", b"",
                           {"Location": f"/chain/{left - 1}" if left > 1 else "/article"})
            elif path == "/big":
                self._stream(b"x" * 1023 + b"\n", BIG_BYTES // 1024, pause=0)
            elif path == "/slow":
                self._stream(b"trickle\n", 200, pause=0.1)
            elif path == "/stall":
                self._stream(b"", 0, pause=0)
            elif path == "/silent":
                _hold(self.connection)
            else:
                self._send(404, "text/plain", b"not found")

        def _send(self, code: int, content_type: str, body: bytes,
                  headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _stream(self, piece: bytes, count: int, pause: float) -> None:
            """`count` copies of `piece`, `pause` seconds apart, with no length given;
            with count 0, hold the connection open and silent."""
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            started = time.monotonic()
            if count == 0:
                _hold(self.connection)
            for _ in range(count):
                if time.monotonic() - started > LIMIT_SECONDS:
                    break
                self.wfile.write(piece)
                if pause:
                    self.wfile.flush()
                    time.sleep(pause)
            self.close_connection = True

    return Handler


@functools.cache
def _bomb() -> bytes:
    """BOMB_BYTES of text as a gzip body of about 60 KB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"a" * (1 << 20)
    return b"".join([*(packer.compress(block) for _ in range(BOMB_BYTES >> 20)),
                     packer.flush()])


def _hold(conn: socket.socket) -> None:
    """Keep a connection open and silent until the client hangs up, at most 20 s."""
    started = time.monotonic()
    while time.monotonic() - started < LIMIT_SECONDS and not _gone(conn):
        time.sleep(0.05)


def _gone(conn: socket.socket) -> bool:
    """Whether the client closed its end (a readable socket with nothing to read)."""
    import select

    readable, _, _ = select.select([conn], [], [], 0)
    if not readable:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class PlayedNetwork(SystemNetwork):
    """Public host names played on the loopback server, with no traffic leaving the
    machine: `names` maps a host to the addresses the 'resolver' answers; every
    connection, whatever address it is for, goes to the server. `connected` records the
    (address, port) fetch_url chose to connect to; `lookups` each name resolved."""

    def __init__(self, web: WebServer, names: dict[str, list[str]]) -> None:
        self.web = web
        self.names = names
        self.connected: list[tuple[str, int]] = []
        self.lookups: list[str] = []

    def resolve(self, host: str, port: int, timeout: float) -> list[str]:
        self.lookups.append(host)
        if host in self.names:
            return list(self.names[host])
        if host in ("127.0.0.1", "::1"):
            return [host]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def connect(self, address: str, port: int, timeout: float | None) -> Any:
        self.connected.append((address, port))
        return super().connect("127.0.0.1", self.web.port, timeout)
