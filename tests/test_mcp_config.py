"""`[mcp_servers.NAME]` tables: validation that reports every problem at once, defaults,
merging entry by entry, project trust, and secrets (hidden in the trust question, part of
the secret set, taken from commands' environment)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swival.config import global_config_path, load_settings, named_secrets
from swival.errors import ConfigError
from swival.mcp.spec import specs_from
from swival.trust import TrustStore, question


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_every_problem_in_the_tables_is_reported_at_once(project: Path) -> None:
    file = write(global_config_path(os.environ), """
[mcp_servers.gh]
command = "gh-mcp"
timeout = 0
headers = { A = "b" }

[mcp_servers.web]
comand = "x"

[mcp_servers.both]
command = "a"
url = "https://b"

[mcp_servers.ftp]
url = "ftp://host/mcp"
env = { "1BAD" = "x" }

[mcp_servers.bad__name]
command = "a"

[mcp_servers."my.server"]
command = "a"
""")
    with pytest.raises(ConfigError) as caught:
        load_settings({}, cwd=project)
    lines = str(caught.value).splitlines()
    where = f"{file}: [mcp_servers."
    assert lines == [
        f"{where}gh]: `timeout` must be a number (at least 1), got 0.",  # as written
        f"{where}gh]: `headers` do not apply to a server with a `command`.",
        f"{where}web]: unknown key `comand`. Did you mean `command`?",
        f"{where}web]: set either `command` (a program that speaks MCP on stdin and stdout) "
        "or `url` (a streamable HTTP endpoint).",
        f"{where}both]: set either `command` (a program that speaks MCP on stdin and stdout) "
        "or `url` (a streamable HTTP endpoint), not both.",
        f"{where}ftp]: `url` must start with http:// or https://, got 'ftp://host/mcp'.",
        f"{where}ftp]: `env` do not apply to a server with a `url`.",
        f"{where}ftp]: `env` names must be variable names, got '1BAD'.",
        f"{where}bad__name]: a name holds up to 32 ASCII letters, digits, '-' and single "
        "'_'; rename the table.",
        f'{where}"my.server"]: a name holds up to 32 ASCII letters, digits, \'-\' and single '
        "'_'; rename the table.",
    ]


def test_tables_get_defaults_and_merge_entry_by_entry(project: Path) -> None:
    write(global_config_path(os.environ),
          '[mcp_servers.a]\ncommand = "one"\n[mcp_servers.b]\ncommand = "two"\n')
    mine = write(project / "mine.toml", '[mcp_servers.b]\nurl = "http://127.0.0.1:1/mcp"\n'
                 '[mcp_servers.c]\ncommand = "three"\nenabled = false\n')
    settings = load_settings({}, cwd=project, config_path=mine)
    assert settings.mcp_servers["a"]["command"] == "one"
    assert settings.mcp_servers["b"]["url"] == "http://127.0.0.1:1/mcp"
    assert settings.mcp_servers["b"]["command"] is None  # replaced whole, not field by field
    assert settings.mcp_servers["a"]["timeout"] == 120.0
    assert settings.mcp_servers["a"]["startup_timeout"] == 30.0
    assert settings.sources["mcp_servers.b"] == str(mine)
    specs, _ = specs_from(settings)
    assert [s.name for s in specs] == ["a", "b"]  # c is disabled
    assert specs[0].cwd == project and specs[1].transport == "http"
    assert specs_from(load_settings({"mcp": False}, cwd=project)) == ([], [])
    off = load_settings({}, cwd=project, env={**os.environ, "SWIVAL_MCP": "0"})
    assert off.mcp is False


def test_trust_true_counts_from_the_users_own_files_only(project: Path) -> None:
    write(global_config_path(os.environ), '[mcp_servers.mine]\ncommand = "a"\ntrust = true\n')
    write(project / "swival.toml", '[mcp_servers.repo]\ncommand = "b"\ntrust = true\n')
    settings = load_settings({}, cwd=project, trusted=lambda file, keys: True)
    specs, notices = specs_from(settings)
    assert {s.name: s.trusted for s in specs} == {"mine": True, "repo": False}
    assert notices == [f"{project / 'swival.toml'} marks MCP server repo `trust = true`; only "
                       "your global config can do that, so its tools will ask first."]


def test_the_trust_question_shows_servers_but_never_their_secrets(project: Path) -> None:
    write(project / "swival.toml", '[mcp_servers.repo]\ncommand = "b"\n'
          'env = { SERVICE_TOKEN = "tok-0123456789" }\n')
    settings = load_settings({}, cwd=project)
    asked = question(settings, TrustStore.for_user(os.environ))
    assert '"command": "b"' in asked and "SERVICE_TOKEN" in asked
    assert "tok-0123456789" not in asked and "(secret, not shown)" in asked


def test_env_and_header_values_join_the_secret_set(project: Path) -> None:
    write(global_config_path(os.environ),
          '[mcp_servers.gh]\ncommand = "a"\nenv = { GH_TOKEN = "ghp-0123456789", DEBUG = "1" }\n'
          '[mcp_servers.web]\nurl = "http://127.0.0.1:1/mcp"\n'
          'headers = { Authorization = "Bearer abcdefgh" }\n')
    settings = load_settings({}, cwd=project)
    named = named_secrets(settings, {})
    assert named == {"mcp_servers.gh.env.GH_TOKEN": "ghp-0123456789",
                     "mcp_servers.web.headers.Authorization": "Bearer abcdefgh"}
    from swival.tools.sandbox import sandbox_from_settings

    sandbox = sandbox_from_settings(settings, {})
    env = sandbox.environment({"PATH": "/bin", "COPY": "ghp-0123456789", "DEBUG": "1"})
    assert "COPY" not in env and env["DEBUG"] == "1"  # a short value is no secret
