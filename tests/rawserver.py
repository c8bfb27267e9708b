"""A raw loopback model server for replies the scripted FakeServer cannot send: any body,
any content type, any size, whatever path the request names."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RawServer:
    """Answers discovery (GET) like llama.cpp and every POST, chat requests and the
    token-counting probes alike, with `body` (bytes, or an iterator of pieces sent until
    the client hangs up) as `content_type`; `requests` counts the chat requests."""

    def __init__(
        self, content_type: str, body: bytes | None = None, pieces: Iterator[bytes] | None = None
    ) -> None:
        self.content_type, self.body, self.pieces = content_type, body, pieces
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def _send(self, status: int, content_type: str, data: bytes | None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                if data is not None:
                    self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    if data is not None:
                        self.wfile.write(data)
                    else:
                        for piece in server.pieces or iter(()):
                            self.wfile.write(piece)
                except OSError:
                    pass  # the client gave up: what the test wants

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                info = (
                    {"default_generation_settings": {"n_ctx": 8192}}
                    if "props" in self.path
                    else {"object": "list", "data": [{"id": "m"}]}
                )
                self._send(200, "application/json", json.dumps(info).encode())

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.requests += "chat" in self.path
                self._send(200, server.content_type, server.body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


SSE_REPLY = (
    b'data: {"choices": [{"index": 0, "delta": {"role": "assistant", '
    b'"content": "fine"}}]}\n\n'
    b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
