"""/model against the loopback fake server: the models each kind of server offers (with
their windows where the server says), and switching to one with another window: the
window detected afresh, the budget rebuilt, the conversation compacted when it no longer
fits, Ollama's num_ctx changed once, the reply naming model and window."""

from __future__ import annotations

from pathlib import Path

import pytest

from swival.commands import dispatch
from swival.config import Settings
from swival.events import Notice
from swival.providers.discovery import ModelChoice
from swival.providers.factory import Connector, connect
from swival.session import Session, build_session
from tests.fakeserver import FakeServer, Reply


def settings_for(server: FakeServer, root: Path, **kw: object) -> Settings:
    return Settings(provider=server.kind, base_url=server.url, project_root=root,
                    max_output_tokens=1024, **kw)  # type: ignore[arg-type]


def session_on(server: FakeServer, root: Path, **kw: object) -> Session:
    settings = settings_for(server, root, **kw)
    return build_session(settings, connect(settings), interactive=False,
                         connector=Connector(settings))


@pytest.mark.parametrize(("kind", "expected"), [
    ("lmstudio", [ModelChoice("big", "loaded", 16384, 32768),
                  ModelChoice("small", "loaded", 4096, 32768)]),
    ("ollama", [ModelChoice("big", "running", 16384),
                ModelChoice("small", "installed", 4096, 32768)]),  # read from /api/show
    ("llamacpp", [ModelChoice("big", "served", 16384)]),
    ("generic", [ModelChoice("big", "listed"), ModelChoice("small", "listed")]),
])
def test_each_kind_of_server_lists_what_it_offers(tmp_path: Path, kind: str,
                                                  expected: list[ModelChoice]) -> None:
    with FakeServer(kind=kind, model="big", window=16384, others={"small": 4096}) as server:
        settings = settings_for(server, tmp_path)
        assert Connector(settings).models() == expected


def test_lmstudio_downloaded_models_show_their_limit(tmp_path: Path) -> None:
    with FakeServer(kind="lmstudio", model="big", loaded=False, others={"small": 4096}) as srv:
        choices = Connector(settings_for(srv, tmp_path)).models()
    assert choices == [ModelChoice("small", "loaded", 4096, 32768),  # loaded ones first
                       ModelChoice("big", "downloaded", None, 32768)]


def test_the_list_is_a_table_with_the_current_model_marked(tmp_path: Path) -> None:
    with FakeServer(kind="ollama", model="big", window=16384, others={"small": 4096}) as srv:
        session = session_on(srv, tmp_path)
        reply = dispatch("/model", session.agent)
    assert reply.headers == ("model", "state", "window")
    assert reply.rows == (("big (current)", "running", "16384"),
                          ("small", "installed", "4096"))
    assert "Using big, window 16384 tokens" in reply.footer


def test_ollama_asks_about_a_bounded_number_of_installed_models(tmp_path: Path) -> None:
    from swival.providers.discovery import OLLAMA_SHOWN

    others = {f"m{i:02d}": 2048 + i for i in range(OLLAMA_SHOWN + 3)}
    with FakeServer(kind="ollama", model="big", window=16384, others=others) as srv:
        session = session_on(srv, tmp_path)
        shows = srv.hits.count(("POST", "/api/show"))
        reply = dispatch("/model", session.agent)
        assert srv.hits.count(("POST", "/api/show")) - shows == OLLAMA_SHOWN
    windows = [row[2] for row in reply.rows[1:]]
    assert windows[:OLLAMA_SHOWN] == [str(2048 + i) for i in range(OLLAMA_SHOWN)]
    assert windows[OLLAMA_SHOWN:] == ["read on switch"] * 3


def test_an_unknown_name_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    with FakeServer(kind="lmstudio", model="big", others={"small-coder": 4096}) as srv:
        session = session_on(srv, tmp_path)
        reply = dispatch("/model small-codr", session.agent)
    assert reply.level == "error" and "Did you mean small-coder?" in reply.text
    assert session.provider.info.model == "big"


def test_a_session_without_a_connector_says_it_cannot_switch(tmp_path: Path) -> None:
    with FakeServer(kind="llamacpp", model="big") as srv:
        settings = settings_for(srv, tmp_path)
        session = build_session(settings, connect(settings), interactive=False)
        reply = dispatch("/model other", session.agent)
    assert reply.level == "error" and "cannot switch" in reply.text and "big" in reply.text


def test_switching_rebuilds_the_budget_and_compacts_when_it_no_longer_fits(
        tmp_path: Path) -> None:
    big = "\n".join(f"line {i} of a long file in the project" for i in range(600))
    (tmp_path / "big.txt").write_text(big)
    # Many small reads: shrunk to records they still overflow the small window's target,
    # so turns are dropped and the new model writes the recap.
    reads = [Reply(tool_calls=(("read_file", {"file_path": "big.txt", "offset": 1 + 20 * n,
                                              "limit": 20}),)) for n in range(30)]

    def recap_or(answer: Reply) -> object:
        return lambda body: answer if body.get("tools") else Reply(text="A recap.")

    with FakeServer(kind="lmstudio", model="big", window=16384, others={"small": 4096}) as srv:
        session = session_on(srv, tmp_path)
        srv.script(*reads, Reply(text="Read it all."),
                   *[recap_or(Reply(text="On the small one."))] * 3)
        list(session.agent.run_turn("read big.txt"))
        before = session.agent.context.estimate()
        reply = dispatch("/model small", session.agent)
        assert reply.text.startswith("Now using small, window 4096 tokens")
        assert "processes the whole conversation again" in reply.text
        assert "The conversation no longer fit the new window" in reply.text
        assert reply.events and session.agent.context.estimate() < before
        assert session.agent.context.budget.window == 4096
        assert session.provider.info.model == "small"  # what --json and the toolbar show
        recaps = [r for r in srv.requests if not r.get("tools")]
        assert recaps and all(r["model"] == "small" for r in recaps)  # the new model recaps
        list(session.agent.run_turn("go on"))
        assert srv.requests[-1]["model"] == "small"


def test_the_same_model_again_names_it_and_its_window(tmp_path: Path) -> None:
    with FakeServer(kind="llamacpp", model="big", window=8192) as srv:
        session = session_on(srv, tmp_path)
        reply = dispatch("/model big", session.agent)
    assert reply.text == "Still using big, window 8192 tokens (llama.cpp /props n_ctx)."


def test_ollama_gets_the_new_window_as_its_one_num_ctx(tmp_path: Path) -> None:
    with FakeServer(kind="ollama", model="big", window=16384, others={"small": 4096}) as srv:
        session = session_on(srv, tmp_path)
        srv.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
        list(session.agent.run_turn("first"))
        reply = dispatch("/model small", session.agent)
        list(session.agent.run_turn("second"))
        list(session.agent.run_turn("third"))
    assert "num_ctx 4096 with every request" in reply.text
    assert srv.num_ctx_seen == [16384, 4096, 4096]
    assert [r["model"] for r in srv.requests] == ["big", "small", "small"]


def test_the_toolbar_follows_a_switch(tmp_path: Path) -> None:
    from tests.test_repl_logic import CTRL_D, Run

    with FakeServer(kind="lmstudio", model="big", window=16384, others={"small": 4096}) as srv:
        run = Run(session_on(srv, tmp_path))
        out = run(f"/model small\r{CTRL_D}")
    assert "Now using small, window 4096 tokens" in " ".join(out.split())
    toolbar = " ".join(text for _, text in run.repl.status.parts(200))
    assert toolbar.startswith("small window 4096 [LM Studio")


def test_a_configured_window_only_caps_the_window_detected_after_a_switch(
        tmp_path: Path) -> None:
    with FakeServer(kind="lmstudio", model="big", window=16384,
                    others={"small-coder": 4096}) as srv:
        session = session_on(srv, tmp_path, max_context_tokens=12000)
        assert session.provider.info.window.tokens == 12000  # sized for this model
        reply = dispatch("/model small-coder", session.agent)
        assert reply.text.startswith(
            "Now using small-coder, window 4096 tokens (LM Studio loaded context length "
            "(/api/v1/models); your max_context_tokens (12000) is more than this model runs)")
        assert session.agent.context.budget.window == 4096
        back = dispatch("/model big", session.agent)
        assert back.text.startswith("Now using big, window 12000 tokens "
                                    "(--max-context-tokens/config)")


def test_on_ollama_a_configured_window_stays_the_num_ctx_after_a_switch(
        tmp_path: Path) -> None:
    with FakeServer(kind="ollama", model="big", window=16384, others={"small": 4096}) as srv:
        session = session_on(srv, tmp_path, max_context_tokens=12000)
        reply = dispatch("/model small", session.agent)
        srv.script(Reply(text="one"))
        list(session.agent.run_turn("first"))
    assert "window 12000 tokens (--max-context-tokens/config)" in reply.text
    assert srv.num_ctx_seen == [12000]


def test_a_model_lm_studio_loads_on_its_first_request_gets_its_window_then(
        tmp_path: Path) -> None:
    with FakeServer(kind="lmstudio", model="big", window=16384,
                    downloaded={"fresh": 6144}) as srv:
        session = session_on(srv, tmp_path)
        srv.script(Reply(text="On big."), Reply(text="On fresh."), Reply(text="Again."))
        list(session.agent.run_turn("hello"))
        reply = dispatch("/model fresh", session.agent)
        assert reply.text.startswith("Now using fresh, window unknown (budgeting on 8192")
        assert ("Its window is read again once the first request reaches it (LM Studio "
                "loads a model then); until then the budget assumes 8192 tokens.") in reply.text
        events = list(session.agent.run_turn("go on"))  # LM Studio loads it now
        told = [e.text for e in events if isinstance(e, Notice)]
        assert told == ["fresh is loaded: window 6144 tokens (LM Studio loaded context length "
                        "(/api/v1/models)); the budget follows it now."]
        assert session.agent.context.budget.window == 6144
        assert session.provider.info.window.tokens == 6144  # the toolbar and --json
        later = list(session.agent.run_turn("and again"))
        assert not [e for e in later if isinstance(e, Notice)]  # read once


def test_a_window_that_stays_unknown_is_named_with_how_to_set_it(tmp_path: Path) -> None:
    with FakeServer(kind="generic", model="big", others={"other": 4096}) as srv:
        session = session_on(srv, tmp_path)
        srv.script(Reply(text="On big."), Reply(text="On other."))
        reply = dispatch("/model other", session.agent)
        assert "the budget assumes 8192 tokens" in reply.text
        events = list(session.agent.run_turn("go on"))
        told = [e.text for e in events if isinstance(e, Notice)]
        assert told == ["other's window is still unknown after its first request: budgeting "
                        "on 8192 tokens. If it runs with another, set max_context_tokens "
                        "(--max-context-tokens) to it."]
