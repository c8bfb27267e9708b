"""A scriptable loopback stand-in for LM Studio, llama.cpp, Ollama and OpenAI-style servers.

    with FakeServer(kind="llamacpp", window=8192, model="test-model") as server:
        server.script(tool("read_file", file_path="a.py"), text("Done."))
        ...point the code under test at server.url (root) or server.v1_url...
        assert server.requests[0]["messages"][0]["role"] == "system"

Construction: `FakeServer(kind, window=8192, model="test-model", **options)`; it listens on
127.0.0.1, port 0, in a daemon thread (start/stop with `with`, or `.start()` / `.stop()`).

What it records: `requests` (parsed JSON bodies of every chat call, in order), `times` (when
each chat call arrived, `time.monotonic()`, so tests can measure the waits between retries),
`hits` (every `(method, path)`), `auth` (the Authorization header of every chat call, None
when absent), `num_ctx_seen` (Ollama `options.num_ctx` of every chat call,
None when absent), `disconnects` (how many clients hung up while a reply was held back).

Script items, taken one per chat call (`/v1/chat/completions` or `/api/chat`):
- `Reply(...)` — build with `text(...)`, `tool(name, **args)`, `tools([...])`, `error(...)`;
- a callable taking the request body and returning a `Reply`, so the fake model can react;
an empty script answers HTTP 500 "script exhausted" so a test never hangs.

`Reply` fields: `text`; `tool_calls` (tuples `(name, arguments)`, where arguments is a dict
or a raw string sent verbatim, e.g. broken JSON); `usage` `(prompt, completion)` overriding
the computed figures; `finish_reason`; `status`/`body` for an error reply; `mode` one of
"normal", "die" (close the connection mid-stream), "truncated" (cut the last SSE event and end
without finish reason or [DONE]), "malformed" (a body or SSE event that is not JSON), "hang"
(send nothing for `hang` seconds, noticing a client that hangs up), "empty" (HTTP 200 with an
empty stream), "trickle" (send half of the events, then only SSE keep-alive comments every
0.1 s for `hang` seconds, then the rest; with no text the trickle comes before any content);
`chunk` (characters per text delta) and `arg_chunk` (characters per tool argument delta, so
arguments arrive split across chunks); `delay` (seconds between streamed events: a slow but
steady generation); `send_usage=False` leaves out the final usage chunk; `cached` adds a
cached-token figure (OpenAI `prompt_tokens_details.cached_tokens`, Ollama
`prompt_eval_cached_count`); `headers` (extra response headers, e.g. `{"Retry-After": "2"}` on
a 429); `raw` (the exact SSE lines to stream instead of the generated events, e.g. comments,
reasoning deltas or error events).

The window: the prompt is estimated at 1 token per 4 characters of the JSON messages and
tools (`count_prompt`; tests/countingserver.py counts the way real servers do). Over the
window, llama.cpp and "openai" kinds answer their exact 400 overflow bodies, LM Studio its
400 context-length text, and Ollama truncates silently (reports at most `num_ctx` prompt
tokens; without `num_ctx` it uses 2048 as old Ollama did).

Options: `loaded` (LM Studio/llama.cpp have a model; Ollama has it running), `installed`
(Ollama's /api/tags names), `lmstudio_api` ("v1", "v0" or "none"), `ps_context` (Ollama
/api/ps context_length; default `window`), `param_num_ctx` (num_ctx in /api/show parameters),
`trained` (trained maximum in /api/show model_info), `others` ({name: window}: more models
the server offers — /v1/models lists them, LM Studio has them loaded with that context
length, Ollama has them installed but not running, with that `num_ctx` in /api/show; a chat
call naming one is held to its window), `downloaded` ({name: window}: LM Studio models not
loaded yet; a chat call naming one loads it with that context length, as LM Studio's
just-in-time loading does).
"""

from __future__ import annotations

import json
import select
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ScriptItem = Any  # a Reply, or Callable[[dict], Reply]


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool_calls: tuple[tuple[str, Any], ...] = ()
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None
    status: int = 200
    body: Any = None
    mode: str = "normal"
    hang: float = 30.0
    chunk: int = 4
    arg_chunk: int = 5
    send_usage: bool = True
    cached: int | None = None
    delay: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    raw: tuple[str, ...] | None = None


def text(content: str, **kw: Any) -> Reply:
    return Reply(text=content, **kw)


def tool(name: str, /, **arguments: Any) -> Reply:
    return Reply(tool_calls=((name, arguments),))


def tools(calls: list[tuple[str, Any]], content: str = "", **kw: Any) -> Reply:
    return Reply(text=content, tool_calls=tuple(calls), **kw)


def error(status: int, message: str = "server error", *, retry_after: str | None = None,
          **kw: Any) -> Reply:
    headers = (("Retry-After", retry_after),) if retry_after is not None else ()
    return Reply(status=status, body={"error": {"message": message, "code": status}},
                 headers=headers, **kw)


def estimate_tokens(body: dict[str, Any]) -> int:
    """The fake's prompt size: one token per 4 characters of messages and tools JSON."""
    raw = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return max(1, len(raw) // 4)


@dataclass
class FakeServer:
    kind: str = "llamacpp"
    window: int = 8192
    model: str = "test-model"
    loaded: bool = True
    installed: tuple[str, ...] | None = None
    lmstudio_api: str = "v1"
    ps_context: int | None = None
    param_num_ctx: int | None = None
    trained: int | None = 32768
    others: dict[str, int] = field(default_factory=dict)
    downloaded: dict[str, int] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    hits: list[tuple[str, str]] = field(default_factory=list)
    num_ctx_seen: list[int | None] = field(default_factory=list)
    disconnects: int = 0
    _queue: list[ScriptItem] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> FakeServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def v1_url(self) -> str:
        return self.url + "/v1"

    def script(self, *items: ScriptItem) -> FakeServer:
        with self._lock:
            self._queue.extend(items)
        return self

    def count_prompt(self, body: dict[str, Any]) -> int:
        """The prompt size this server sees (subclasses count differently)."""
        return estimate_tokens(body)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            item = self._queue.pop(0) if self._queue else None
        if item is None:
            return error(500, f"FakeServer: script exhausted at request {len(self.requests)}")
        return item(body) if callable(item) else item

    # -- canned discovery answers --------------------------------------------------------
    def window_for(self, body: dict[str, Any]) -> int:
        """The window of the model a chat call names (`others`), else `window`; a
        `downloaded` model it names is loaded from then on."""
        name = str(body.get("model"))
        if name in self.downloaded:
            self.others[name] = self.downloaded.pop(name)
        return self.others.get(name, self.window)

    def discovery(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any] | None:
        names = list(self.installed if self.installed is not None else (self.model,))
        names += [name for name in self.others if name not in names]
        loaded = {self.model: self.window} if self.loaded else {}
        loaded.update(self.others)
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": name, "object": "model"}
                                                    for name in loaded]}
        if self.kind == "llamacpp" and path == "/props":
            return 200, {"default_generation_settings": {"n_ctx": self.window},
                         "model_path": f"/models/{self.model}.gguf", "total_slots": 1}
        if self.kind == "lmstudio" and path == "/api/v1/models" and self.lmstudio_api == "v1":
            models = [{"type": "llm", "key": self.model, "max_context_length": 32768,
                       "loaded_instances": []}] if not self.loaded else []
            models += [{"type": "llm", "key": name, "max_context_length": 32768,
                        "loaded_instances": [{"id": name, "config": {"context_length": ctx}}]}
                       for name, ctx in loaded.items()]
            models += [{"type": "llm", "key": name, "max_context_length": 32768,
                        "loaded_instances": []} for name in self.downloaded]
            return 200, {"models": models}
        if self.kind == "lmstudio" and path == "/api/v0/models" and self.lmstudio_api == "v0":
            return 200, {"data": [{"id": self.model, "type": "llm", "max_context_length": 32768,
                                   "state": "loaded" if self.loaded else "not-loaded",
                                   "loaded_context_length": self.window}]}
        if self.kind == "ollama":
            return self._ollama_discovery(path, body, names)
        return None

    def _ollama_discovery(
        self, path: str, body: dict[str, Any], names: list[str]
    ) -> tuple[int, Any] | None:
        if path == "/api/tags":
            return 200, {"models": [{"name": n, "model": n, "size": 1} for n in names]}
        if path == "/api/ps":
            ctx = self.ps_context if self.ps_context is not None else self.window
            running = [{"name": self.model, "model": self.model, "context_length": ctx}]
            return 200, {"models": running if self.loaded else []}
        if path == "/api/show":
            wanted = str(body.get("model") or body.get("name"))
            if wanted not in names and wanted + ":latest" not in names:
                return 404, {"error": f"model '{wanted}' not found"}
            info: dict[str, Any] = {"general.architecture": "qwen2"}
            if self.trained:
                info["qwen2.context_length"] = self.trained
            num_ctx = self.others.get(wanted, self.param_num_ctx)
            params = f"num_ctx {num_ctx}\n" if num_ctx else ""
            return 200, {"parameters": params + 'stop "<|im_end|>"', "model_info": info}
        return None

    def overflow_body(self, prompt: int, window: int | None = None) -> tuple[int, Any] | None:
        """The 400 a real server of this kind answers when `prompt` exceeds the window
        (`window`, or the server's)."""
        window = self.window if window is None else window
        if prompt <= window or self.kind == "ollama":
            return None
        if self.kind == "lmstudio":
            return 400, {"error": f"Trying to keep the first {prompt} tokens when context the "
                         f"overflows. However, the model is loaded with context length of only "
                         f"{window} tokens, which is not enough. Try to load the model "
                         "with a larger context length, or provide a shorter input"}
        if self.kind == "openai":
            return 400, {"error": {
                "message": f"This model's maximum context length is {window} tokens. "
                           f"However, your messages resulted in {prompt} tokens.",
                "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded"}}
        return 400, {"error": {
            "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": prompt,
            "n_ctx": window,
            "message": "the request exceeds the available context size, try increasing it"}}


def _pieces(s: str, size: int) -> list[str]:
    return [s[i: i + size] for i in range(0, len(s), max(1, size))] or [""]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        pass

    # -- plumbing ------------------------------------------------------------------------
    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {"_unparsed": raw.decode("utf-8", "replace")}
        return data if isinstance(data, dict) else {"_body": data}

    def _send_json(self, status: int, payload: Any, raw: bytes | None = None,
                   headers: tuple[tuple[str, str], ...] = ()) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _wait_or_notice_hangup(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if the client hung up meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.connection], [], [], 0.05)
            if ready and not self.connection.recv(1, 2):  # MSG_PEEK: b"" means closed
                with self.fake._lock:
                    self.fake.disconnects += 1
                return True
        return False

    # -- routes --------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._route("GET", {})

    def do_POST(self) -> None:  # noqa: N802
        self._route("POST", self._body())

    def _route(self, method: str, body: dict[str, Any]) -> None:
        path = self.path.split("?")[0].rstrip("/")
        self.fake.hits.append((method, path))
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions",
                                         "/api/chat"):
            self.fake.auth.append(self.headers.get("Authorization"))
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            return self._openai_chat(body)
        if method == "POST" and path == "/api/chat" and self.fake.kind == "ollama":
            return self._ollama_chat(body)
        canned = self.fake.discovery(method, path, body)
        if canned is None:
            return self._send_json(404, {"error": f"no route {method} {path}"})
        self._send_json(*canned)

    def _prelude(self, reply: Reply, prompt: int, overflow: tuple[int, Any] | None) -> bool:
        """Handle error, overflow, hang and malformed replies; True when fully answered."""
        if reply.mode == "hang" and self._wait_or_notice_hangup(reply.hang):
            return True
        if reply.status != 200:
            self._send_json(reply.status, reply.body, headers=reply.headers)
            return True
        if overflow is not None:
            self._send_json(*overflow)
            return True
        return False

    def _usage(self, reply: Reply, prompt: int, content: str) -> tuple[int, int]:
        if reply.usage is not None:
            return reply.usage
        return prompt, max(1, len(content) // 4)

    # -- OpenAI-style chat ---------------------------------------------------------------
    def _openai_chat(self, body: dict[str, Any]) -> None:
        reply = self.fake.next_reply(body)
        prompt = self.fake.count_prompt(body)
        overflow = self.fake.overflow_body(prompt, self.fake.window_for(body))
        if self._prelude(reply, prompt, overflow):
            return
        if not body.get("stream"):
            return self._openai_plain(body, reply, prompt)
        self._start_chunked("text/event-stream")
        if reply.mode == "empty":
            self._chunk(b"data: [DONE]\n\n")
            return self._end_chunked()
        if reply.raw is not None:
            return self._send_events(reply, list(reply.raw))
        events = _openai_events(self.fake.model, reply)
        prompt_t, completion_t = self._usage(reply, prompt, reply.text)
        usage: dict[str, Any] = {"prompt_tokens": prompt_t, "completion_tokens": completion_t,
                                 "total_tokens": prompt_t + completion_t}
        if reply.cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached}
        if reply.send_usage and (body.get("stream_options") or {}).get("include_usage"):
            events.append({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                           "model": self.fake.model, "choices": [], "usage": usage})
        self._send_events(reply, [f"data: {json.dumps(e)}\n\n" for e in events]
                          + ["data: [DONE]\n\n"])

    def _send_events(self, reply: Reply, lines: list[str]) -> None:
        if reply.mode == "die":
            for line in lines[: max(1, len(lines) // 2)]:
                self._chunk(line.encode())
            self.connection.shutdown(2)  # no terminating chunk: the body is incomplete
            return
        if reply.mode == "truncated":
            lines = lines[: max(1, len(lines) // 2)]
            lines[-1] = lines[-1][: len(lines[-1]) // 2]
        if reply.mode == "malformed":
            lines.insert(1, "data: {not json at all\n\n")
        stall_at = -1
        if reply.mode == "trickle":  # after the role event when there is nothing to say
            stall_at = len(lines) // 2 if reply.text or reply.tool_calls else 1
        for i, line in enumerate(lines):
            if i == stall_at and self._trickle(reply.hang):
                return
            if reply.delay and i:
                time.sleep(reply.delay)
            self._chunk(line.encode())
        self._end_chunked()

    def _trickle(self, seconds: float) -> bool:
        """Send only keep-alive comments for `seconds`; True if the client hung up."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self._chunk(b": keep-alive\n\n")
            except OSError:
                with self.fake._lock:
                    self.fake.disconnects += 1
                return True
            if self._wait_or_notice_hangup(0.1):
                return True
        return False

    def _openai_plain(self, body: dict[str, Any], reply: Reply, prompt: int) -> None:
        if reply.mode == "malformed":
            return self._send_json(200, None, raw=b'{"id": "chatcmpl-fake", "choices": [')
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": n, "arguments": _arg_text(a)}}
                for i, (n, a) in enumerate(reply.tool_calls)]
        p, c = self._usage(reply, prompt, reply.text)
        self._send_json(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "model": self.fake.model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}})

    # -- Ollama native chat --------------------------------------------------------------
    def _ollama_chat(self, body: dict[str, Any]) -> None:
        reply = self.fake.next_reply(body)
        num_ctx = (body.get("options") or {}).get("num_ctx")
        with self.fake._lock:
            self.fake.num_ctx_seen.append(num_ctx)
        prompt = self.fake.count_prompt(body)
        if self._prelude(reply, prompt, None):
            return
        p, c = self._usage(reply, min(prompt, num_ctx or 2048), reply.text)
        records: list[dict[str, Any]] = [
            {"model": self.fake.model, "message": {"role": "assistant", "content": piece},
             "done": False} for piece in _pieces(reply.text, reply.chunk) if piece]
        if reply.tool_calls:
            calls = [{"function": {"name": n, "arguments": a}} for n, a in reply.tool_calls]
            records.append({"model": self.fake.model, "done": False,
                            "message": {"role": "assistant", "content": "", "tool_calls": calls}})
        done = {"model": self.fake.model, "message": {"role": "assistant", "content": ""},
                "done": True, "done_reason": reply.finish_reason or "stop",
                "prompt_eval_count": p, "eval_count": c}
        if reply.cached is not None:
            done["prompt_eval_cached_count"] = reply.cached
        records.append(done)
        lines = [json.dumps(r) + "\n" for r in records]
        if reply.mode == "malformed":
            lines.insert(0, "{not json\n")
        self._start_chunked("application/x-ndjson")
        if reply.mode == "die":
            for line in lines[: max(1, len(lines) // 2)]:
                self._chunk(line.encode())
            self.connection.shutdown(2)
            return
        for line in lines:
            self._chunk(line.encode())
        self._end_chunked()


def _arg_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _openai_events(model: str, reply: Reply) -> list[dict[str, Any]]:
    """The chunk objects of a streamed reply: role, text pieces, split tool calls, finish."""
    def event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": piece}) for piece in _pieces(reply.text, reply.chunk) if piece]
    for i, (name, arguments) in enumerate(reply.tool_calls):
        events.append(event({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                             "function": {"name": name, "arguments": ""}}]}))
        for piece in _pieces(_arg_text(arguments), reply.arg_chunk):
            events.append(event({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(event({}, _finish(reply)))
    return events


