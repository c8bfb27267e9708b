"""Hosted models (a litellm model string, no --base-url), offline, against loopback servers.

- Connecting, and everything the REPL builds before its prompt, imports no litellm: the
  window comes from litellm's price map read as a file, and agrees with litellm's own.
- Through litellm's real code, in one child process with every non-loopback connection
  refused (tests/hosted_child.py, importing litellm once): a streamed exchange, its price,
  the warm-up preloading what the first call needs, and the time limits of the direct
  transports (`request_timeout`, `idle_timeout`) holding for hosted streams too.
- The installed `swival`, one-shot `--json`, reports the cost by the price map; in the REPL a
  request typed at once waits behind a live spinner while litellm loads, then is answered.
- Failures, in plain words: without its key variable `swival` stops before any request
  (exit 2, naming the variable); a refused key stops at once; 429 and 5xx are retried
  (Retry-After honoured); a missing model is named with look-alikes; no message carries a
  traceback, an exception class name or brackets inside brackets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swival.providers.keys import missing_key
from swival.providers.pricemap import PRICE_SOURCE, hosted_window, load_map, map_path, model_entry
from tests.e2e import run_swival
from tests.fakeserver import FakeServer, Reply, error, text

ROOT = Path(__file__).resolve().parents[1]
MODEL = "openai/gpt-4o-mini"
HOSTED_ARGS = ("--provider", "generic", "--model", MODEL)
SWIVAL = shutil.which("swival")


def hosted_env(server: FakeServer) -> dict[str, str]:
    """litellm sends openai/ models to OPENAI_API_BASE: the loopback server stands in."""
    return {"OPENAI_API_BASE": server.v1_url, "OPENAI_BASE_URL": server.v1_url,
            "OPENAI_API_KEY": "sk-test-hosted-key"}


# -- the price map, read as a file ---------------------------------------------------------

def write_map(path: Path, entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def test_window_lookup_follows_litellm_keys(tmp_path: Path) -> None:
    path = write_map(tmp_path / "map.json", {
        "gpt-x": {"litellm_provider": "openai", "max_input_tokens": 1000, "max_tokens": 50},
        "openrouter/lab/model-y": {"litellm_provider": "openrouter", "max_tokens": 2000},
        "gemini-z": {"litellm_provider": "vertex_ai-language-models", "max_input_tokens": 3000},
        "odd": {"litellm_provider": "openai", "max_input_tokens": True, "max_tokens": -1},
    })
    assert hosted_window("openai/gpt-x", path).tokens == 1000
    assert hosted_window("openai/GPT-X", path).tokens == 1000
    window = hosted_window("openrouter/lab/model-y", path)
    assert window.tokens == 2000 and window.source == f"{PRICE_SOURCE}, max_tokens"
    assert hosted_window("vertex_ai/gemini-z", path).tokens == 3000
    assert hosted_window("groq/gpt-x", path).tokens is None  # another provider's entry
    unknown = hosted_window("openai/odd", path)
    assert unknown.tokens is None and "--max-context-tokens" in unknown.source


def test_a_missing_or_broken_map_means_an_unknown_window(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    for path in (broken, tmp_path / "absent.json"):
        assert load_map(path) == {}
        assert hosted_window(MODEL, path).tokens is None


def test_the_installed_map_is_litellms_own() -> None:
    path = map_path()
    assert path is not None and path.parent.name == "litellm"
    entry = model_entry(load_map(path), MODEL)
    assert entry is not None and hosted_window(MODEL).tokens == entry["max_input_tokens"]


def test_connect_and_the_repl_before_its_prompt_import_no_litellm(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from swival.config import load_settings\n"
        "from swival.session import open_session\n"
        "from swival.repl import Repl\n"
        f"settings = load_settings({{'provider': 'generic', 'model': {MODEL!r}}})\n"
        "session = open_session(settings, interactive=True)\n"
        "Repl(session)\n"
        "print(session.provider.info.window.describe())\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'httpx', "
        "'openai'}))\n"
    )
    (tmp_path / ".git").mkdir()
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "OPENAI_API_KEY": "sk-x"})
    assert out.returncode == 0, out.stderr
    window, loaded = out.stdout.strip().splitlines()[-2:]
    assert window == f"128000 tokens ({PRICE_SOURCE}, max_input_tokens)"
    assert loaded == "[]"


# -- litellm's real code, in one child process ---------------------------------------------

@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """No litellm, tokenizer or proxy environment: Swival must keep litellm offline alone."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LITELLM", "TIKTOKEN", "OPENAI")) and not k.endswith("_PROXY")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    project = tmp_path_factory.mktemp("hosted-project")
    out = subprocess.run([sys.executable, "-m", "tests.hosted_child", str(project)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Give Feedback" not in out.stderr and "LiteLLM" not in out.stderr
    yield json.loads(out.stdout.strip().splitlines()[-1])


def test_nothing_tries_to_leave_the_machine(child: dict[str, Any]) -> None:
    assert child["attempts"] == []  # warm-up rehearsals and calls included
    assert child["mcp_sdk_loaded"] is False


def test_a_streamed_exchange_through_litellm(child: dict[str, Any]) -> None:
    done = child["exchange"]
    assert done["call"] == ["read_file", {"file_path": "a.py"}]
    assert done["answer"] == "It prints hello." and done["usage"] == [40, 5]
    assert done["model_sent"] == "gpt-4o-mini"
    assert done["window"] == [128_000, f"{PRICE_SOURCE}, max_input_tokens"]


def test_calls_are_priced_by_the_offline_map(child: dict[str, Any]) -> None:
    done = child["exchange"]
    assert done["priced"] > 0 and 0 < done["spent"] < done["priced"]
    assert re.search(r"Cost so far: \$0\.0\d{3} \(litellm's bundled price map\)",
                     done["context_footer"])


def test_price_map_windows_agree_with_litellm(child: dict[str, Any]) -> None:
    for model, (ours, theirs) in child["agreement"].items():
        assert ours == theirs, model


def test_the_first_call_after_the_warm_up_imports_nothing_more(child: dict[str, Any]) -> None:
    assert child["first_call_imports"] == []


def test_a_keep_alive_trickle_is_cut_by_idle_timeout_and_retried(
        child: dict[str, Any]) -> None:
    trickle = child["limits"]["trickle"]
    assert trickle["answer"] == "Second try." and trickle["restarts"] == 1
    assert trickle["requests"] == 2
    assert trickle["seconds"] < 10  # the trickle would last 20 s


def test_a_silent_server_is_cut_by_request_timeout(child: dict[str, Any]) -> None:
    silent = child["limits"]["silent"]
    assert silent["answer"] == "After the silence." and silent["requests"] == 4
    assert silent["seconds"] < 10


def test_a_slow_steady_stream_is_never_cut(child: dict[str, Any]) -> None:
    steady = child["limits"]["steady"]
    assert steady["answer"] == "A slow but steady stream of words."
    assert steady["restarts"] == 0 and steady["requests"] == 5
    assert steady["seconds"] > 1.0  # longer than both limits: only progress kept it going


# -- the installed command -----------------------------------------------------------------

def test_one_shot_json_reports_the_cost_by_the_price_map(fake_server: Any,
                                                         tmp_path: Path) -> None:
    server = fake_server(kind="openai", model="gpt-4o-mini", window=128_000)
    server.script(Reply(tool_calls=(("list_files", {"path": "."}),), usage=(1500, 20)),
                  text("Two files.", usage=(2000, 10)))
    (tmp_path / "a.py").write_text("print(1)\n")
    result = run_swival(None, tmp_path, *HOSTED_ARGS, "--json", "-p", "list the files",
                        env=hosted_env(server), timeout=180)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    entry = model_entry(load_map(map_path()), MODEL)
    assert entry is not None
    expected = (3500 * entry["input_cost_per_token"] + 30 * entry["output_cost_per_token"])
    assert report["answer"] == "Two files." and report["window"] == 128_000
    assert report["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert server.auth == ["Bearer sk-test-hosted-key"] * 2


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
@pytest.mark.timeout(120)
def test_repl_request_typed_at_once_waits_behind_a_live_spinner(fake_server: Any,
                                                                tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    server = fake_server(kind="openai", model="gpt-4o-mini", window=128_000)
    server.script(text("Hosted answer."))
    (tmp_path / ".git").mkdir()
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color", **hosted_env(server)}
    child = pexpect.spawn(SWIVAL, list(HOSTED_ARGS), cwd=str(tmp_path), env=env,
                          encoding="utf-8", dimensions=(40, 120), timeout=90)
    child.expect_exact("›")
    banner = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before).split())
    assert f"window 128000 tokens ({PRICE_SOURCE}" in banner  # the banner may wrap
    child.send("what is the answer?\r")
    child.expect_exact("Hosted answer.")
    waited = [float(s) for s in re.findall(r"preparing · (\d+\.\d)s", child.before)]
    assert len(set(waited)) >= 2, "the spinner did not move while litellm loaded"
    child.expect_exact("›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and len(server.requests) == 1


# -- what a person is told when a hosted call fails ----------------------------------------

def bracket_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest


def plain_words(text: str) -> bool:
    """No traceback, no exception class names, no brackets inside brackets."""
    return ("Traceback" not in text and "litellm" not in text and bracket_depth(text) <= 1
            and not re.search(r"\b\w+(Error|Exception)\b", text))


def test_a_refused_key_stops_at_once_and_names_the_variable(child: dict[str, Any]) -> None:
    refused = child["errors"]["refused_key"]
    assert refused["error"] == "ProviderError" and refused["requests"] == 1  # not retried
    assert refused["message"].startswith("openai refused the API key (HTTP 401).")
    assert "Incorrect API key provided" in refused["message"]
    assert "OPENAI_API_KEY" in refused["message"] and plain_words(refused["message"])


def test_a_missing_key_at_call_time_names_the_variable(child: dict[str, Any]) -> None:
    missing = child["errors"]["no_key"]
    assert missing["error"] == "ProviderError" and missing["requests"] == 0
    assert missing["message"] == ("No API key for openai. Set OPENAI_API_KEY "
                                  "(export OPENAI_API_KEY=...) or pass --api-key.")


def test_a_rate_limit_is_retried_after_what_retry_after_asks(child: dict[str, Any]) -> None:
    limited = child["errors"]["rate_limited"]
    assert limited["error"] is None and limited["requests"] == 2
    assert limited["seconds"] >= 1.0  # Retry-After: 1, against a backoff of 0.01 s


def test_server_errors_are_retried_and_reported_in_plain_words(child: dict[str, Any]) -> None:
    failed = child["errors"]["server_error"]
    assert failed["error"] == "TransientProviderError" and failed["requests"] == 3
    assert failed["message"].startswith(
        "openai's API kept failing after 3 attempts; the last failure: server error "
        '(HTTP 503). Details: "The engine is currently overloaded".')
    assert plain_words(failed["message"]) and "(hosted)" not in failed["message"]


def test_the_retry_line_of_a_cut_reply_reads_plainly(child: dict[str, Any]) -> None:
    cut = child["errors"]["cut"]
    assert cut["error"] is None and cut["requests"] == 2
    [line] = cut["restarts"]
    assert re.fullmatch(r"The reply was cut: the connection to openai's API dropped, "
                        r"retrying in \d+\.\d s \(attempt 2 of 3\)\.", line), line


def test_a_missing_model_is_named_with_look_alikes(child: dict[str, Any]) -> None:
    missing = child["errors"]["no_model"]
    assert missing["error"] == "ProviderError" and missing["requests"] == 1
    assert missing["message"].startswith("openai has no model 'openai/gpt-4o-mni' (HTTP 404).")
    assert "openai/gpt-4o-mini" in missing["message"] and "--model openai/<name>" in (
        missing["message"])
    assert plain_words(missing["message"].replace("`gpt-4o-mni`", ""))


def test_an_unreachable_provider_is_not_a_server_to_start(child: dict[str, Any]) -> None:
    unreachable = child["errors"]["unreachable"]
    assert unreachable["error"] == "ProviderUnreachable" and unreachable["exit_code"] == 3
    assert unreachable["message"].startswith("Cannot connect to openai's API (model "
                                             "openai/gpt-4o-mini). Check this machine's network")
    assert "Start" not in unreachable["message"] and plain_words(unreachable["message"])


def test_swival_without_the_key_fails_before_any_request(fake_server: Any,
                                                         tmp_path: Path) -> None:
    server = fake_server(kind="openai", model="gpt-4o-mini")
    for model, variable in ((MODEL, "OPENAI_API_KEY"),
                            ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY")):
        env = {**hosted_env(server), "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "",
               "ANTHROPIC_AUTH_TOKEN": ""}
        result = run_swival(None, tmp_path, "--provider", "generic", "--model", model, "-p",
                            "hello", env=env, timeout=60)
        assert result.returncode == 2, result.stderr
        provider = model.split("/")[0]
        assert result.stderr == (f"swival: No API key for {provider} (model {model}). "
                                 f"Set {variable} (export {variable}=...) or pass --api-key.\n")
    assert server.hits == []


def test_swival_with_a_refused_key_says_so_once(fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="openai", model="gpt-4o-mini")
    server.script(error(401, "Incorrect API key provided: sk-test...-key."))
    result = run_swival(None, tmp_path, *HOSTED_ARGS, "-p", "hello", env=hosted_env(server),
                        timeout=180)
    assert result.returncode == 1 and len(server.requests) == 1  # not retried
    [said] = [line for line in result.stderr.splitlines() if line.startswith("swival: ")]
    assert said.startswith("swival: openai refused the API key (HTTP 401).")
    assert "OPENAI_API_KEY" in said and plain_words(said) and "Traceback" not in result.stderr


def test_the_key_check_knows_litellms_other_names() -> None:
    assert missing_key("gemini/gemini-2.5-flash", None, {}) == "GEMINI_API_KEY"
    assert missing_key("gemini/gemini-2.5-flash", None, {"GOOGLE_API_KEY": "g"}) is None
    assert missing_key("openrouter/a/b", None, {"OPENROUTER_API_KEY": " "}) == (
        "OPENROUTER_API_KEY")
    assert missing_key("openrouter/a/b", "sk-given", {}) is None  # --api-key
    assert missing_key("bedrock/anthropic.claude", None, {}) is None  # credential chains


def test_a_repositorys_env_file_does_not_reach_the_run(fake_server: Any, tmp_path: Path) -> None:
    """With the virtual environment inside the project (`.venv/`), litellm's import would
    load the repository's `.env` into the process: a planted BASH_ENV then runs code before
    every command, allowlisted or not. Here litellm is reached through a symlink under the
    project, so its own search for `.env` starts inside the repository."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin is not None
    site = tmp_path / ".venv" / "site"
    site.mkdir(parents=True)
    (site / "litellm").symlink_to(Path(spec.origin).parent)
    (tmp_path / ".env").write_text("SWIVAL_PLANTED=from-the-repo\nBASH_ENV=./evil.sh\n")
    (tmp_path / "evil.sh").write_text("touch pwned\n")
    server = fake_server(kind="openai", model="gpt-4o-mini", window=128_000)
    server.script(Reply(tool_calls=(("run_command", {"command": "printenv"}),)), text("Done."))
    env = {**hosted_env(server), "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    result = run_swival(None, tmp_path, *HOSTED_ARGS, "--commands", "printenv", "--sandbox",
                        "off", "-p", "show the environment", env=env, timeout=180)
    assert result.returncode == 0, result.stderr
    [shown] = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "PATH=" in shown and "[exit code 0]" in shown
    assert "SWIVAL_PLANTED" not in shown and "BASH_ENV" not in shown
    assert not (tmp_path / "pwned").exists()
