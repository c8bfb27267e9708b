"""fetch_url the way a user meets it: the installed `swival` one-shot against the fake
model server and a loopback web server, the REPL's approval question, and the
window-scaled cap on a fetched page inside a real session."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput

from swival.config import Settings
from swival.providers.base import ChatRequest
from swival.repl import Repl, ReplIO
from swival.session import build_session
from tests.e2e import request_text, run_swival
from tests.fakeserver import text, tool
from tests.scripted import ScriptedProvider, call, reply
from tests.webserver import PlayedNetwork, WebServer

CTRL_D = "\x04"


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer() as server:
        yield server


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_one_shot_fetches_a_named_local_server(fake_server: Any, tmp_path: Path,
                                              web: WebServer) -> None:
    seen: list[str] = []

    def answer(body: dict[str, Any]) -> Any:
        seen.extend(tool_messages(body))
        return text("The article says: validate early.")

    server = fake_server(kind="llamacpp", window=8192).script(
        tool("fetch_url", url=web.url("/article")), answer)
    result = run_swival(server, tmp_path, "--fetch", f"127.0.0.1:{web.port}", "-p",
                        "what does the article on the dev server say?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The article says: validate early.\n"
    assert f"fetch_url {web.url('/article')} — HTTP 200" in result.stderr
    assert len(seen) == 1 and "MARKER-ONE" in seen[0] and "MARKER-THREE" in seen[0]
    assert "BOILERPLATE" not in request_text(server.requests[-1])
    assert web.paths == ["/article"]


@pytest.mark.parametrize("flags", [(), ("--yolo",)])
def test_one_shot_without_naming_the_server_refuses_and_says_how(
        fake_server: Any, tmp_path: Path, web: WebServer, flags: tuple[str, ...]) -> None:
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("fetch_url", url=web.url("/secret")), text("I could not fetch it."))
    result = run_swival(server, tmp_path, *flags, "-p", "fetch the local page")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "I could not fetch it.\n"
    [refusal] = tool_messages(server.requests[-1])
    assert refusal.startswith("fetch refused: 127.0.0.1 is a loopback address")
    assert f"--fetch 127.0.0.1:{web.port}" in refusal
    assert "SECRET" not in request_text(server.requests[-1]) and web.paths == []
    assert (f"✗ fetch_url {web.url('/secret')} — not fetched: 127.0.0.1 is a loopback address "
            f"(--fetch 127.0.0.1:{web.port} allows it)") in result.stderr
    notice = "Fetch: every public host may be fetched without asking (--yolo)."
    assert (notice in result.stderr) == ("--yolo" in flags)


def test_fetch_none_leaves_the_tool_out_and_a_bad_setting_exits_2(
        fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="llamacpp", window=8192).script(text("ok"))
    result = run_swival(server, tmp_path, "--fetch", "none", "-p", "hi")
    assert result.returncode == 0, result.stderr
    names = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert "fetch_url" not in names and "read_file" in names
    bad = run_swival(server, tmp_path, "--fetch", "http://localhost:8000", "-p", "hi")
    assert bad.returncode == 2
    assert "fetch: 'http://localhost:8000' is not a valid setting" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_fetch_key_is_read_from_the_global_config(fake_server: Any, tmp_path: Path,
                                                      web: WebServer) -> None:
    config = tmp_path / ".xdg" / "swival" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'fetch = "127.0.0.1:{web.port}"\n')
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("fetch_url", url=web.url("/json")), text("done"))
    result = run_swival(server, tmp_path, "--json", "-p", "get the json")
    assert json.loads(result.stdout)["answer"] == "done", result.stderr
    assert '"name": "swival"' in tool_messages(server.requests[-1])[0]


def test_the_repl_asks_once_always_or_no(tmp_path: Path, web: WebServer) -> None:
    provider = ScriptedProvider([
        call("fetch_url", url="http://docs.test/article"),
        call("fetch_url", url="http://docs.test/json"),
        call("fetch_url", url="http://other.test/text"),
        reply("done"),
    ])
    session = build_session(Settings(project_root=tmp_path, max_output_tokens=1024),
                            provider, interactive=True)
    session.agent.tool_ctx.network = PlayedNetwork(
        web, {"docs.test": ["93.184.216.34"], "other.test": ["151.101.0.223"]})
    prompts, console = io.StringIO(), io.StringIO()
    with create_pipe_input() as keys:
        keys.send_text(f"read the docs\ra\rn\r{CTRL_D}")
        io_ = ReplIO(input=keys, output=PlainTextOutput(prompts), console_file=console,
                     width=100, color=False, warm_up=lambda: None, history=False)
        assert Repl(session, io_).run() == 0
    shown, asked = console.getvalue(), prompts.getvalue()
    assert "Fetch http://docs.test/article?" in shown
    assert "Fetch http://docs.test/json?" not in shown  # "always" covered it
    assert "Fetch http://other.test/text?" in shown
    assert "[y]es once / [a]lways allow docs.test / [n]o" in asked
    assert "[y]es once / [a]lways allow other.test / [n]o" in asked
    results = [m.content for m in provider.requests[-1].messages if m.role == "tool"]
    assert "MARKER-ONE" in results[0] and '"name": "swival"' in results[1]
    assert "declined" in results[2]
    assert web.paths == ["/article", "/json"]


def test_a_page_larger_than_the_window_share_is_cut_by_the_engine(tmp_path: Path,
                                                                 web: WebServer) -> None:
    def answer(request: ChatRequest) -> Any:
        return reply("ok")

    provider = ScriptedProvider([call("fetch_url", url=web.url("/big"), max_chars=20_000),
                                 answer], window=8192)
    settings = Settings(project_root=tmp_path, max_output_tokens=1024,
                        fetch=f"127.0.0.1:{web.port}")
    session = build_session(settings, provider, interactive=False)
    list(session.agent.run_turn("fetch the big page"))
    [seen] = [m.content for m in provider.requests[-1].messages if m.role == "tool"]
    share = session.agent.context.budget.input_budget * settings.tool_result_share
    assert session.agent.context.counter.text(seen) <= share
    assert "[output cut to fit the context window" in seen
    saved = seen.split("file_path=")[1].split()[0].strip('"')
    folder = f".swival/out/{session.agent.context.session_id}/fetch-"
    assert saved.startswith(folder) and (tmp_path / saved).is_file()
    # fetch_url saved the whole page: the engine's cut names that file and the page's
    # full size, and saves no second file holding only the head
    spilled = list((tmp_path / folder).parent.glob("*.txt"))
    assert [f.name for f in spilled] == [Path(saved).name]
    whole = (tmp_path / saved).read_text()
    assert f"{len(whole)} characters in full, saved to {saved}" in seen


def test_a_cloned_projects_fetch_key_applies_only_with_trust(fake_server: Any, tmp_path: Path,
                                                            web: WebServer) -> None:
    repo = tmp_path / "cloned"
    (repo / ".git").mkdir(parents=True)
    (repo / "swival.toml").write_text(f'fetch = "127.0.0.1:{web.port}"\n')
    script = (tool("fetch_url", url=web.url("/secret")), text("done"))
    server = fake_server(kind="llamacpp", window=8192).script(*script)
    untrusted = run_swival(server, repo, "-p", "fetch it")
    assert untrusted.returncode == 0, untrusted.stderr
    assert "fetch" in untrusted.stderr.splitlines()[0] and "--trust" in untrusted.stderr
    assert tool_messages(server.requests[-1])[0].startswith("fetch refused: 127.0.0.1 is a")
    assert web.paths == []
    server.script(*script)
    trusted = run_swival(server, repo, "--trust", "-p", "fetch it")
    assert trusted.returncode == 0, trusted.stderr
    assert "SECRET-VALUE" in tool_messages(server.requests[-1])[0]
    assert web.paths == ["/secret"]
