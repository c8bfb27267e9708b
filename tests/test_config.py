from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from swival.config import KEYS, Settings, load_settings, read_toml
from swival.errors import ConfigError


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def test_defaults_when_nothing_is_configured(tmp_path: Path, env: dict[str, str]) -> None:
    s = load_settings({}, cwd=tmp_path, env=env)
    assert s.provider == "lmstudio"
    assert s.max_output_tokens == 32768
    assert s.max_context_tokens is None
    assert s.config_files == ()


def test_precedence_cli_env_project_global(tmp_path: Path, env: dict[str, str]) -> None:
    _write(tmp_path / "xdg/swival/config.toml", 'model = "global"\nmax_turns = 7\nretries = 9\n')
    _write(tmp_path / "swival.toml", 'model = "project"\nmax_turns = 8\n')
    env["SWIVAL_MAX_TURNS"] = "11"
    s = load_settings({"model": "cli"}, cwd=tmp_path, env=env)
    assert s.model == "cli"
    assert s.max_turns == 11
    assert s.retries == 9
    assert s.sources["model"] == "command line"
    assert s.sources["max_turns"] == "environment variable SWIVAL_MAX_TURNS"
    assert s.sources["retries"].endswith("config.toml")
    assert len(s.config_files) == 2


def test_project_root_is_the_git_root(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / ".git").mkdir()
    _write(tmp_path / "swival.toml", "max_turns = 3\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    s = load_settings({}, cwd=sub, env=env)
    assert s.project_root == tmp_path.resolve()
    assert s.max_turns == 3


def test_unknown_key_names_file_key_and_suggestion(tmp_path: Path) -> None:
    path = _write(tmp_path / "swival.toml", "max_turn = 3\n")
    with pytest.raises(ConfigError) as info:
        read_toml(path)
    text = str(info.value)
    assert str(path) in text and "`max_turn`" in text and "max_turns" in text
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('max_turns = "ten"', "an integer"),
        ("quiet = 1", "true or false"),
        ('provider = "vllm"', "one of 'lmstudio'"),
        ("add_dir = [1]", "a list of strings"),
        ("max_output_tokens = 3", "at least 16"),
    ],
)
def test_wrong_type_names_what_was_expected(tmp_path: Path, line: str, expected: str) -> None:
    path = _write(tmp_path / "swival.toml", line + "\n")
    with pytest.raises(ConfigError) as info:
        read_toml(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_syntax_error_is_a_config_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "swival.toml", "model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_toml(path)


def test_bad_environment_value(tmp_path: Path, env: dict[str, str]) -> None:
    env["SWIVAL_QUIET"] = "maybe"
    with pytest.raises(ConfigError, match="SWIVAL_QUIET"):
        load_settings({}, cwd=tmp_path, env=env)


def test_env_lists_and_floats(tmp_path: Path, env: dict[str, str]) -> None:
    env["SWIVAL_ADD_DIR"] = "a, b"
    env["SWIVAL_TOOL_RESULT_SHARE"] = "0.3"
    s = load_settings({}, cwd=tmp_path, env=env)
    assert s.add_dir == ("a", "b")
    assert s.tool_result_share == pytest.approx(0.3)


def test_explicit_config_path_replaces_project_file(tmp_path: Path, env: dict[str, str]) -> None:
    _write(tmp_path / "swival.toml", "max_turns = 3\n")
    other = _write(tmp_path / "other.toml", "max_turns = 4\n")
    assert load_settings({}, cwd=tmp_path, env=env, config_path=other).max_turns == 4
    with pytest.raises(ConfigError, match="no such config file"):
        load_settings({}, cwd=tmp_path, env=env, config_path=tmp_path / "missing.toml")


def test_every_key_is_a_setting_with_the_same_default() -> None:
    defaults = Settings()
    for key in KEYS:
        value = getattr(defaults, key.name)
        expected = tuple(key.default) if key.type is list else key.default
        assert value == expected, key.name


def test_example_file_documents_every_key() -> None:
    from swival.starter import example_text

    text = example_text()  # package data: pip and pipx installs have it too
    for key in KEYS:
        if key.fields:  # a table: its example entry names every field
            assert f"[{key.name}." in text, key.name
            for field in key.fields:
                assert f"# {field.name} =" in text, f"{key.name}.{field.name}"
        else:
            assert f"{key.name} =" in text, key.name


def test_literal_key_in_a_project_file_inside_git_warns(tmp_path: Path,
                                                        env: dict[str, str]) -> None:
    from swival.config import literal_key_warning

    _write(tmp_path / "swival.toml", 'api_key = "sk-literal-123456789"\n')
    outside_git = load_settings({}, cwd=tmp_path, env=env)
    assert literal_key_warning(outside_git) is None
    (tmp_path / ".git").mkdir()
    inside_git = load_settings({}, cwd=tmp_path, env=env)
    warning = literal_key_warning(inside_git) or ""
    assert "swival.toml" in warning and "environment variable" in warning
    assert "sk-literal" not in warning
    from_cli = load_settings({"api_key": "sk-from-cli-123456"}, cwd=tmp_path, env=env)
    assert literal_key_warning(from_cli) is None


def test_user_state_dir_follows_xdg_and_home(tmp_path: Path) -> None:
    from swival.config import user_state_dir

    assert user_state_dir({"XDG_STATE_HOME": str(tmp_path / "s")}) == tmp_path / "s" / "swival"
    assert user_state_dir({"HOME": str(tmp_path)}) == tmp_path / ".local/state/swival"


@pytest.mark.parametrize(("name", "secret"), [
    ("OPENAI_API_KEY", True), ("GITHUB_TOKEN", True), ("aws_secret_access_key", True),
    ("DB_PASSWORD", True), ("MY_SECRET", True), ("PATH", False), ("TOKENIZERS_PARALLELISM",
                                                                   False), ("HOME", False),
])
def test_secret_names(name: str, secret: bool) -> None:
    from swival.config import is_secret_name, known_secrets

    assert is_secret_name(name) is secret
    assert (known_secrets(None, {name: "a-long-value-123"}) == ("a-long-value-123",)) is secret


@pytest.mark.parametrize(("source", "expected"), [  # the value as the person wrote it
    ({"cli": {"compaction_trigger": 3.0}}, "from 0.1 to 1, got 3."),  # typed `3`
    ({"cli": {"compaction_trigger": 3.5}}, "from 0.1 to 1, got 3.5."),
    ({"toml": "tool_result_share = 7\n"}, "from 0.01 to 1, got 7."),
    ({"toml": "max_turns = 7.0\n"}, "`max_turns` must be an integer, got 7.0."),
    ({"env": {"SWIVAL_COMPACTION_TARGET": "0"}}, "from 0.05 to 1, got 0."),
    ({"env": {"SWIVAL_MAX_TURNS": "7.0"}}, "`max_turns` must be an integer, got 7.0."),
])
def test_shares_are_range_checked(tmp_path: Path, env: dict[str, str],
                                  source: dict[str, Any], expected: str) -> None:
    if "toml" in source:
        _write(tmp_path / "swival.toml", source["toml"])
    with pytest.raises(ConfigError, match=re.escape(expected) + "$"):
        load_settings(source.get("cli", {}), cwd=tmp_path, env={**env, **source.get("env", {})})


def test_target_must_be_below_trigger(tmp_path: Path, env: dict[str, str]) -> None:
    path = _write(tmp_path / "swival.toml", "compaction_trigger = 0.5\n")
    with pytest.raises(ConfigError) as info:
        load_settings({"compaction_target": 0.9}, cwd=tmp_path, env=env)
    text = str(info.value)
    assert "`compaction_target` (0.9, from command line) must be below" in text
    assert f"`compaction_trigger` (0.5, from {path})" in text
    with pytest.raises(ConfigError, match=r"\(0\.55, from the default\)"):
        load_settings({"compaction_trigger": 0.55}, cwd=tmp_path / "elsewhere", env=env)
    fine = load_settings({"compaction_target": 0.4}, cwd=tmp_path, env=env)
    assert (fine.compaction_trigger, fine.compaction_target) == (0.5, 0.4)


def test_every_problem_of_every_source_is_reported_at_once(tmp_path: Path,
                                                          env: dict[str, str]) -> None:
    _write(tmp_path / "xdg/swival/config.toml", "max_turn = 3\nquiet = 1\n")
    project = _write(tmp_path / "swival.toml", 'provider = "vllm"\ncompaction_trigger = 3.0\n')
    env["SWIVAL_MAX_TURNS"] = "abc"
    with pytest.raises(ConfigError) as info:
        load_settings({"tool_result_share": 7.0}, cwd=tmp_path, env=env)
    lines = str(info.value).splitlines()
    assert len(lines) == 6, lines
    for expected in ("`max_turn`", "`quiet` must be true or false", f"{project}: `provider`",
                     "`compaction_trigger`", "SWIVAL_MAX_TURNS", "option --tool-result-share"):
        assert any(expected in line for line in lines), expected


def test_unknown_key_message_needs_no_file_the_user_lacks(tmp_path: Path) -> None:
    path = _write(tmp_path / "swival.toml", "wibble = 3\n")
    with pytest.raises(ConfigError) as info:
        read_toml(path)
    text = str(info.value)
    assert "Known keys: provider, base_url" in text and "swival --init-config stdout" in text
    assert ".example" not in text and "docs/" not in text


@pytest.mark.parametrize(("files", "cli", "expected"), [
    ({"xdg/swival/config.toml": "json = true\n"}, {}, "json"),
    ({"xdg/swival/config.toml": "json = true\n"}, {"output_format": "stream-json"},
     "stream-json"),
    ({"xdg/swival/config.toml": "json = true\n"}, {"json": False}, "text"),
    ({"xdg/swival/config.toml": 'output_format = "stream-json"\n',
      "swival.toml": "json = true\n"}, {}, "json"),
    ({"swival.toml": 'json = true\noutput_format = "text"\n'}, {}, "text"),
])
def test_json_is_output_format_json_in_its_own_layer(
        tmp_path: Path, env: dict[str, str], files: dict[str, str], cli: dict[str, Any],
        expected: str) -> None:
    for name, text in files.items():
        _write(tmp_path / name, text)
    settings = load_settings(cli, cwd=tmp_path, env=env)
    assert settings.output_format == expected
    assert settings.json is (expected == "json")


def test_requested_format_is_read_past_broken_sources(tmp_path: Path,
                                                      env: dict[str, str]) -> None:
    from swival.config import requested_output_format

    _write(tmp_path / "swival.toml", "json = true\nmax_turn = 3\nquiet = 1\n")
    env["SWIVAL_MAX_TURNS"] = "abc"
    assert requested_output_format({}, cwd=tmp_path, env=env) == "json"
    assert requested_output_format({"output_format": "bogus"}, cwd=tmp_path, env=env) == "json"
    _write(tmp_path / "swival.toml", "json = [\n")  # not TOML at all
    assert requested_output_format({}, cwd=tmp_path, env=env) == "text"
