"""fetch_url against a real loopback web server (tests/webserver.py). Public host names
are played on loopback by `PlayedNetwork`, so the public-host rules run offline: the tool
resolves through it, the policy checks what it answers, and every connection lands on the
test server (which records each path, so a request that should never have been made is
seen)."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swival.messages import ToolCall, ToolResult
from swival.tools.approval import Approvals
from swival.tools.base import ToolContext
from swival.tools.fetch_policy import FetchPolicy
from swival.tools.fetch_url import FetchLimits, FetchUrl
from swival.tools.read_file import ReadFile
from swival.tools.registry import ToolRegistry
from tests.webserver import BIG_BYTES, PlayedNetwork, WebServer

PUBLIC = "93.184.216.34"
NAMES = {"docs.test": [PUBLIC], "other.test": ["151.101.0.223"],
         "internal.test": ["10.1.2.3"], "rebind.test": [PUBLIC, "127.0.0.1"]}
BOILERPLATE = ("BOILERPLATE-NAV", "BOILERPLATE-SIDEBAR", "BOILERPLATE-COOKIE",
               "BOILERPLATE-FOOTER", "BOILERPLATE-SCRIPT", "BOILERPLATE-COMMENT")


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer() as server:
        yield server


def fetch(ctx: ToolContext, url: str, limits: FetchLimits | None = None,
          **args: Any) -> ToolResult:
    registry = ToolRegistry([FetchUrl(limits), ReadFile()])
    return registry.run(ToolCall("c1", "fetch_url", {"url": url, **args}), ctx)


def local(tmp_path: Path, web: WebServer, setting: str | None = None) -> ToolContext:
    """The real network, with the test server named in the setting."""
    return ToolContext(root=tmp_path,
                       fetch_policy=FetchPolicy(setting or f"127.0.0.1:{web.port}"))


def played(tmp_path: Path, web: WebServer, setting: str = "all", yolo: bool = False,
           approvals: Approvals | None = None) -> tuple[ToolContext, PlayedNetwork]:
    network = PlayedNetwork(web, NAMES)
    policy = FetchPolicy(setting, yolo=yolo, approvals=approvals or Approvals())
    return ToolContext(root=tmp_path, fetch_policy=policy, network=network), network


# -- content ------------------------------------------------------------------------------

@pytest.mark.parametrize("page", ["/article", "/docs", "/gzip"])
def test_html_becomes_markdown_of_the_main_content(tmp_path: Path, web: WebServer,
                                                   page: str) -> None:
    result = fetch(local(tmp_path, web), web.url(page))
    assert not result.is_error, result.content
    text = result.content
    assert all(f"MARKER-{n}" in text for n in ("ONE", "TWO", "THREE")), text
    assert not [b for b in BOILERPLATE if b in text], text
    assert text.startswith(f"Fetched {web.url(page)} (HTTP 200, text/html as Markdown")
    assert "os.path.join" in text or "tomllib.loads(path.read_text())" in text
    if page != "/docs":
        assert "Title: Parsing configuration files safely" in text
        assert "[the reference](https://docs.example.org/config)" in text
        assert "| key | default |" in text and "# Parsing configuration" in text
    assert len(text) < 2500  # the ~7.6 KB page minus its boilerplate


def test_a_page_whose_content_is_a_list_of_links_keeps_them_absolute(
        tmp_path: Path, web: WebServer) -> None:
    result = fetch(local(tmp_path, web), web.url("/index"))
    for n in (0, 19):  # relative links come back absolute, ready for the next fetch_url
        assert f"[swival-{n}.tar.gz]({web.url(f'/swival-{n}.tar.gz')})" in result.content


def test_json_is_reindented_and_bad_json_passes_through(tmp_path: Path,
                                                        web: WebServer) -> None:
    ctx = local(tmp_path, web)
    result = fetch(ctx, web.url("/json"))
    assert '{\n "name": "swival",\n "tags": [\n  "agent",' in result.content
    assert "application/json as JSON" in result.content
    bad = fetch(ctx, web.url("/bad-json"))
    assert "{'not': json,}" in bad.content and "not valid JSON" in bad.content


@pytest.mark.parametrize(("page", "expected"), [
    ("/latin1", "Café crème, naïve façade, déjà vu."),
    ("/meta-cp1251", "Съешь же ещё этих мягких французских булок"),
    ("/sniff-cp1251", "Широкая электрификация южных губерний"),
    ("/latin1-said-utf8", "Le garçon a mangé une crêpe à la fête."),
    ("/cp1251-said-utf8", "Широкая электрификация южных губерний"),
    ("/text", "line one\nline two ✓"),
    ("/octet-text", "plain words in an untyped body"),
])
def test_text_is_decoded_by_its_declared_or_detected_charset(tmp_path: Path, web: WebServer,
                                                              page: str, expected: str) -> None:
    result = fetch(local(tmp_path, web), web.url(page))
    assert not result.is_error
    assert expected in result.content and "\ufffd" not in result.content


@pytest.mark.parametrize(("page", "what"), [("/image", "image/png"),
                                            ("/octet", "application/octet-stream")])
def test_binary_is_refused_with_its_content_type(tmp_path: Path, web: WebServer, page: str,
                                                 what: str) -> None:
    result = fetch(local(tmp_path, web), web.url(page))
    assert result.is_error
    assert f"is not text ({what}); fetch_url returns text only" in result.content
    assert result.meta["summary"] == f"not text ({what}, 2 KB)"  # not "HTTP 200, 0 bytes"


@pytest.mark.parametrize("code", [404, 500])
def test_http_errors_come_back_as_errors_with_the_page_text(tmp_path: Path, web: WebServer,
                                                            code: int) -> None:
    result = fetch(local(tmp_path, web), web.url(f"/{code}"))
    assert result.is_error
    reason = {404: "Not Found", 500: "Internal Server Error"}[code]
    assert result.content.startswith(f"fetch failed: HTTP {code} {reason}")
    assert f"Error {code}" in result.content and "No such page here." in result.content


def test_pages_without_text_say_so(tmp_path: Path, web: WebServer) -> None:
    ctx = local(tmp_path, web)
    assert "JavaScript" in fetch(ctx, web.url("/js-app")).content
    assert "[the body is empty]" in fetch(ctx, web.url("/empty")).content


def test_an_html_fragment_gives_its_text_and_a_lying_content_type_is_caught(
        tmp_path: Path, web: WebServer) -> None:
    ctx = local(tmp_path, web)
    fragment = fetch(ctx, web.url("/fragment"))
    assert not fragment.is_error and "Build 42 passed" in fragment.content
    assert "JavaScript" not in fragment.content
    lying = fetch(ctx, web.url("/png-as-html"))
    assert lying.is_error and "is not text (text/html, but the data is binary)" in lying.content
    page = fetch(ctx, web.url("/html-as-json"))
    assert "application/json as Markdown from HTML (not JSON)" in page.content
    assert "MARKER-ONE" in page.content and "BOILERPLATE-NAV" not in page.content


# -- size and time limits -----------------------------------------------------------------

def test_a_20_mb_body_stops_at_5_mb_and_the_text_is_capped_and_saved(tmp_path: Path,
                                                                     web: WebServer) -> None:
    ctx = local(tmp_path, web)
    started = time.monotonic()
    result = fetch(ctx, web.url("/big"))
    assert time.monotonic() - started < 20
    assert not result.is_error
    assert BIG_BYTES == 20 * 1024 * 1024 and "5242880 bytes" in result.content
    assert "[incomplete: the download stopped at the 5 MB limit" in result.content
    assert result.meta["summary"].endswith("; the download stopped at the 5 MB limit")
    assert len(result.content) <= 50_000 + 400
    saved = result.meta["path"]
    assert result.meta["kind"] == "file" and saved.startswith(".swival/out/session/fetch-")
    assert f'read_file file_path="{saved}" offset=' in result.content
    whole = (tmp_path / saved).read_text()
    assert whole.count("x" * 1023 + "\n") == 5 * 1024 and whole.startswith(result.content[:200])


def test_a_gzip_bomb_is_decompressed_only_up_to_the_limit(tmp_path: Path,
                                                         web: WebServer) -> None:
    """64 MB in a 60 KB gzip body: decompression stops at the limit (1 MB here), so the
    memory taken stays near it instead of the 64 MB one network read would expand to."""
    limits = FetchLimits(max_bytes=1024 * 1024)
    fetch(local(tmp_path, web), web.url("/gzip"), limits)  # the client's own set-up
    tracemalloc.start()
    try:
        result = fetch(local(tmp_path, web), web.url("/bomb"), limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not result.is_error
    assert result.meta["summary"] == ("HTTP 200, 1048576 bytes; the download stopped at the "
                                      "1 MB limit")
    assert peak < 12 * 1024 * 1024, peak


@pytest.mark.parametrize(("page", "said"), [
    ("/deflate", "zlib-wrapped MARKER-ONE"), ("/raw-deflate", "raw MARKER-ONE"),
    ("/two-members", "first MARKER-ONE\nsecond"),
    ("/corrupt-gzip", "fetch failed: the body's gzip data is corrupt"),
    ("/brotli", "fetch failed: the body is encoded as 'br', which fetch_url cannot decode"),
])
def test_encoded_bodies_are_decoded_or_clearly_refused(tmp_path: Path, web: WebServer,
                                                       page: str, said: str) -> None:
    result = fetch(local(tmp_path, web), web.url(page))
    assert said in result.content and result.is_error == said.startswith("fetch failed")
    assert "incomplete" not in result.content


def test_max_chars_cuts_at_a_line_and_read_file_continues_where_it_stopped(
        tmp_path: Path, web: WebServer) -> None:
    ctx = local(tmp_path, web)
    result = fetch(ctx, web.url("/article"), max_chars=400)
    shown, note = result.content.rsplit("\n[page cut at ", 1)
    assert len(shown) <= 400 and "MARKER-TWO" not in shown
    offset = int(note.split("offset=")[1].split()[0])
    rest = ToolRegistry([ReadFile()]).run(
        ToolCall("c2", "read_file", {"file_path": result.meta["path"], "offset": offset}), ctx)
    assert "MARKER-TWO" in rest.content and "MARKER-THREE" in rest.content
    whole = (tmp_path / result.meta["path"]).read_text().splitlines()
    assert whole[: offset - 1] == shown.splitlines()  # the note's offset: the first unseen line
    assert rest.content.startswith(f"{offset}\t{whole[offset - 1]}")


def test_a_trickling_body_ends_at_the_deadline_with_what_arrived(tmp_path: Path,
                                                                 web: WebServer) -> None:
    limits = FetchLimits(total_seconds=1.5, idle_seconds=1.0)
    started = time.monotonic()
    result = fetch(local(tmp_path, web), web.url("/slow"), limits)
    took = time.monotonic() - started
    assert 1.4 < took < 5, took
    assert not result.is_error
    assert "still arriving after 1.5 s" in result.content and "trickle\n" in result.content
    assert "still arriving after 1.5 s" in result.meta["summary"]


@pytest.mark.parametrize("page", ["/stall", "/silent"])
def test_a_server_that_stops_sending_is_given_up_at_the_idle_limit(tmp_path: Path,
                                                                   web: WebServer,
                                                                   page: str) -> None:
    limits = FetchLimits(total_seconds=30, idle_seconds=0.8)
    started = time.monotonic()
    result = fetch(local(tmp_path, web), web.url(page), limits)
    assert time.monotonic() - started < 4
    assert result.is_error
    assert "stopped sending data (idle timeout)" in result.content
    if page == "/stall":  # the headers came, the body did not
        assert "nothing of the body arrived" in result.content
        # what the person reads says why, not just "HTTP 200, 0 bytes"
        assert result.meta["summary"] == ("HTTP 200, 0 bytes; 127.0.0.1 stopped sending data "
                                          "(idle timeout)")


# -- reaching hosts -----------------------------------------------------------------------

def test_a_name_that_does_not_resolve_reads_as_offline_or_wrong(tmp_path: Path,
                                                                web: WebServer) -> None:
    ctx, _ = played(tmp_path, web)
    result = fetch(ctx, "https://nowhere.test/page")
    assert result.is_error
    assert "cannot resolve nowhere.test" in result.content and "offline" in result.content


def test_a_host_name_the_resolver_cannot_encode_is_a_quick_clear_error(
        tmp_path: Path, web: WebServer, capfd: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    result = fetch(local(tmp_path, web, "all"), f"http://{'a' * 70}.test/")
    assert time.monotonic() - started < 5
    assert result.is_error and "not a valid host name" in result.content
    assert "Traceback" not in capfd.readouterr().err


def test_nothing_listening_is_a_clear_connection_error(tmp_path: Path, web: WebServer) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = fetch(local(tmp_path, web, f"127.0.0.1:{port}"), f"http://127.0.0.1:{port}/")
    assert result.is_error and f"cannot connect to 127.0.0.1 port {port}" in result.content


@pytest.mark.parametrize(("url", "said"), [
    ("file:///etc/passwd", "only http and https"), ("ftp://docs.test/x", "only http and https"),
    ("docs.test/page", "only http and https"), ("http:///nohost", "no host name"),
    ("http://[::1/x", "not a valid URL"),
])
def test_only_valid_http_and_https_urls_are_fetched(tmp_path: Path, web: WebServer, url: str,
                                                    said: str) -> None:
    ctx, network = played(tmp_path, web)
    result = fetch(ctx, url)
    assert result.is_error and said in result.content, result.content
    assert "unexpectedly" not in result.content and network.lookups == []


def test_public_hosts_connect_to_the_checked_address(tmp_path: Path, web: WebServer) -> None:
    ctx, network = played(tmp_path, web, "docs.test")
    result = fetch(ctx, "http://docs.test/article")
    assert not result.is_error and "MARKER-ONE" in result.content
    assert network.lookups == ["docs.test"]  # resolved once ...
    assert network.connected == [(PUBLIC, 80)]  # ... and that very address connected


@pytest.mark.parametrize("setting", ["all", "ask", "internal.test.example"])
def test_a_public_name_resolving_to_a_private_address_is_refused_even_under_yolo(
        tmp_path: Path, web: WebServer, setting: str) -> None:
    ctx, network = played(tmp_path, web, setting, yolo=True)
    for host, address in (("internal.test", "10.1.2.3"), ("rebind.test", "127.0.0.1")):
        result = fetch(ctx, f"http://{host}/secret")
        assert result.is_error and result.meta.get("refused")
        assert f"{host} resolves to {address}" in result.content
        assert f"--fetch {host}:80" in result.content
    assert network.connected == [] and web.paths == []


@pytest.mark.parametrize("target", [
    "http://127.0.0.1:{port}/secret", "http://localhost:{port}/secret",
    "http://[::ffff:127.0.0.1]:{port}/secret", "http://169.254.169.254/latest/meta-data/",
    "http://internal.test/secret", "http://0.0.0.0:{port}/secret",
])
def test_a_redirect_from_an_allowed_host_to_a_private_address_is_refused(
        tmp_path: Path, web: WebServer, target: str) -> None:
    ctx, network = played(tmp_path, web, "docs.test", yolo=True)
    to = target.format(port=web.port)
    result = fetch(ctx, f"http://docs.test/redirect?to={to}")
    assert result.is_error and result.meta.get("refused"), result.content
    assert "reached through a redirect from http://docs.test/redirect" in result.content
    assert web.paths == [f"/redirect?to={to}"] and "SECRET" not in result.content
    assert network.connected == [(PUBLIC, 80)]


@pytest.mark.parametrize("to", ["file:///etc/passwd", "ftp://docs.test/x"])
def test_a_redirect_to_a_url_that_is_not_http_is_refused_as_written(
        tmp_path: Path, web: WebServer, to: str) -> None:
    result = fetch(local(tmp_path, web), web.url(f"/redirect?to={to}"))
    assert result.is_error and result.meta.get("refused")
    assert (f"redirects to {to}, which is not an http(s) URL; only those are fetched"
            in result.content), result.content
    assert result.meta["summary"] == f"not fetched: it redirects to a {to[:to.index(':')]} URL"


def test_redirects_are_followed_up_to_five(tmp_path: Path, web: WebServer) -> None:
    ctx = local(tmp_path, web)
    five = fetch(ctx, web.url("/chain/5"))
    assert not five.is_error and "MARKER-ONE" in five.content
    assert "Redirected from: " + web.url("/chain/5") in five.content
    six = fetch(ctx, web.url("/chain/6"))
    assert six.is_error and "more than 5 redirects" in six.content
    assert web.paths.count("/article") == 1


def test_a_redirect_to_another_host_is_asked_about_again(tmp_path: Path,
                                                         web: WebServer) -> None:
    asked: list[tuple[str, str]] = []

    def confirm(action: str, scopes: tuple[str, ...], detail: str) -> str:
        asked.append((action, scopes[0]))
        return "once" if scopes[0] == "docs.test" else "deny"

    ctx, network = played(tmp_path, web, "ask", approvals=Approvals(confirm=confirm))
    result = fetch(ctx, "http://docs.test/redirect?to=http://other.test/article")
    assert [scope for _, scope in asked] == ["docs.test", "other.test"]
    assert result.is_error and "declined" in result.content
    assert result.meta["summary"] == "not fetched: you declined"
    assert web.paths == ["/redirect?to=http://other.test/article"]


def test_one_shot_without_approval_refuses_and_says_how_to_allow(tmp_path: Path,
                                                                 web: WebServer) -> None:
    ctx, network = played(tmp_path, web, "ask")
    result = fetch(ctx, "https://docs.test/article")
    assert result.is_error and result.content.startswith("fetch refused: docs.test is not")
    assert "--fetch docs.test" in result.content
    assert network.lookups == [] and web.paths == []


def test_a_session_starts_without_loading_the_fetch_client(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from swival.config import Settings\n"
        "from swival.session import build_session\n"
        "from tests.scripted import ScriptedProvider\n"
        f"build_session(Settings(project_root=Path({str(tmp_path)!r})), ScriptedProvider([]),"
        " interactive=False)\n"
        "heavy = ('trafilatura', 'lxml', 'charset_normalizer', 'swival.tools.fetch_net',"
        " 'swival.tools.fetch_convert')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert "LOADED []" in out.stdout, out.stdout + out.stderr
