"""Project trust in the config layer: a project's `swival.toml` keys that need trust apply
only when the trust check allows them; every other source always applies; the record of
trust notices a changed or added key."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from swival.config import KEYS, KEYS_BY_NAME, literal_key_warning, load_settings
from swival.errors import ConfigError
from swival.providers.factory import hosted_model
from swival.trust import TrustStore, ignored_notice, question
from tests.evidence import record

OUTSIDE = "/somewhere/else"
# key, TOML line, the value the run then uses
POWER = [
    ("yolo", "yolo = true", True),
    ("commands", 'commands = "all"', "all"),
    ("add_dir", f'add_dir = ["{OUTSIDE}"]', (OUTSIDE,)),
    ("add_dir_ro", f'add_dir_ro = ["{OUTSIDE}"]', (OUTSIDE,)),
    ("base_url", 'base_url = "http://203.0.113.9:8080"', "http://203.0.113.9:8080"),
    ("api_key", 'api_key = "sk-from-the-repo-123456"', "sk-from-the-repo-123456"),
]


def _trust_all(file: Path, keys: Any) -> bool:
    return True


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "XDG_STATE_HOME": str(tmp_path / "state")}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def _project_file(root: Path, *lines: str) -> Path:
    path = root / "swival.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _global_file(env: dict[str, str], *lines: str) -> None:
    path = Path(env["XDG_CONFIG_HOME"]) / "swival" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(("name", "line", "value"), POWER, ids=[p[0] for p in POWER])
def test_power_key_ignored_untrusted_applied_trusted(
        name: str, line: str, value: Any, project: Path, env: dict[str, str]) -> None:
    file = _project_file(project, line, "max_turns = 7")
    store = TrustStore.for_user(env)
    untrusted = load_settings({}, cwd=project, env=env, trusted=store.check)
    record("untrusted config key", line, "in-process",
           escaped=getattr(untrusted, name) == value)
    assert getattr(untrusted, name) == KEYS_BY_NAME[name].default or (
        getattr(untrusted, name) == () and KEYS_BY_NAME[name].default == [])
    assert dict(untrusted.held_back) == {name: value}
    assert name not in untrusted.sources
    assert untrusted.max_turns == 7  # safe keys keep loading from the project file

    no_check = load_settings({}, cwd=project, env=env)
    assert dict(no_check.held_back) == {name: value}

    trusted = load_settings({}, cwd=project, env=env, trusted=_trust_all)
    assert getattr(trusted, name) == value and trusted.held_back == {}
    assert trusted.sources[name] == str(file)
    assert trusted.project_trusted and dict(trusted.trust_keys) == {name: value}


def test_every_power_key_carries_the_mark() -> None:
    for name, _, _ in POWER:
        assert KEYS_BY_NAME[name].trusted_only is True, name
    for name in ("provider", "model", "read_only", "edits", "sandbox", "fetch"):
        assert KEYS_BY_NAME[name].trusted_only is True, name
        assert KEYS_BY_NAME[name].safer is not None, name
    safe = {"max_turns", "quiet", "json", "max_context_tokens", "tool_result_share"}
    assert not any(KEYS_BY_NAME[name].trusted_only for name in safe)
    assert [k.name for k in KEYS if k.secret] == ["api_key"]
    docs = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    section = docs.split("## Project trust", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("| `"))
    for key in KEYS:
        assert (f"`{key.name}`" in table) == bool(key.trusted_only), key.name


def test_default_values_need_no_trust(project: Path, env: dict[str, str]) -> None:
    _project_file(project, "yolo = false", 'commands = "ask"', "add_dir = []",
                  'provider = "lmstudio"')
    settings = load_settings({}, cwd=project, env=env)
    assert settings.held_back == {} and settings.sources["commands"].endswith("swival.toml")


# The user's global file protects; the untrusted project file tries to undo it.
GLOBAL_PROTECTIONS = ['edits = "ask"', 'sandbox = "on"', "read_only = true", 'commands = "none"',
                      'fetch = "none"', "yolo = false", 'add_dir = ["../lib"]']
LOOSER = [("edits", 'edits = "auto"'), ("sandbox", 'sandbox = "auto"'),
          ("read_only", "read_only = false"), ("commands", 'commands = "ask"'),
          ("fetch", 'fetch = "ask"'), ("add_dir", 'add_dir = ["../lib", "/elsewhere"]')]


def test_a_project_file_cannot_lower_the_users_own_protections(
        project: Path, env: dict[str, str]) -> None:
    """Values no looser than the defaults are still looser than what the user chose."""
    _global_file(env, *GLOBAL_PROTECTIONS)
    _project_file(project, *(line for _, line in LOOSER))
    store = TrustStore.for_user(env)
    settings = load_settings({}, cwd=project, env=env, trusted=store.check)
    for name, line in LOOSER:
        record("untrusted config key", f"{line} over the user's own stricter value",
               "in-process", escaped=name not in settings.held_back)
    assert set(settings.held_back) == {name for name, _ in LOOSER}
    assert (settings.edits, settings.sandbox, settings.read_only) == ("ask", "on", True)
    assert (settings.commands, settings.fetch, settings.add_dir) == ("none", "none", ("../lib",))
    notice = ignored_notice(settings, store) or ""
    assert "ignoring edits, sandbox, read_only, commands, fetch, add_dir" in notice
    trusted = load_settings({}, cwd=project, env=env, trusted=_trust_all)
    assert (trusted.edits, trusted.sandbox, trusted.read_only) == ("auto", "auto", False)


@pytest.mark.parametrize(("mine", "project_line", "applies"), [
    ([], 'edits = "ask"', True),
    ([], 'sandbox = "on"', True),
    ([], "read_only = true", True),
    ([], 'commands = "none"', True),
    ([], 'fetch = "none"', True),
    (['sandbox = "on"'], 'sandbox = "off"', False),
    (['sandbox = "off"'], 'sandbox = "auto"', True),
    (['commands = "all"'], 'commands = "git,pytest"', True),
    (['commands = "git,pytest"'], 'commands = "git"', True),
    (['commands = "git"'], 'commands = "git,make"', False),
    (['commands = "ask"'], 'commands = "git"', False),
    (['commands = "none"'], 'commands = "ask"', False),
    (['commands = "git"'], 'commands = "git,ask"', False),  # a program named ask
    (['fetch = "all"'], 'fetch = "ask"', True),
    (['fetch = "docs.python.org,github.com"'], 'fetch = "github.com"', True),
    (['fetch = "all"'], 'fetch = "all,localhost:8000"', False),
    (['fetch = "all"'], 'fetch = "localhost:8000"', False),
    (["yolo = true"], "yolo = false", True),
    (["allow_net = true"], "allow_net = false", True),
    (['add_dir = ["../a", "../b"]'], 'add_dir = ["../b"]', True),
    (['pass_env = ["GH_TOKEN"]'], 'pass_env = ["GH_TOKEN", "NPM_TOKEN"]', False),
    (['edits = "auto"'], 'edits = "ask"', True),
    (['base_url = "http://127.0.0.1:8080"'], 'base_url = "http://127.0.0.1:8080"', True),
    (['base_url = "http://127.0.0.1:8080"'], 'base_url = "http://127.0.0.1:9090"', False),
    ([], 'subagent_tools = "read-only"', True),
    (['subagent_tools = "all"'], 'subagent_tools = "edit_file"', True),
    (['subagent_tools = "edit_file"'], 'subagent_tools = "edit_file,run_command"', False),
    ([], 'subagent_tools = "all"', False),
])
def test_a_value_no_looser_than_the_users_own_needs_no_trust(
        project: Path, env: dict[str, str], mine: list[str], project_line: str,
        applies: bool) -> None:
    if mine:
        _global_file(env, *mine)
    _project_file(project, project_line)
    name = project_line.split(" = ")[0]
    settings = load_settings({}, cwd=project, env=env)
    assert (name not in settings.held_back) is applies, settings.held_back
    assert (settings.sources.get(name) == str(project / "swival.toml")) is applies


def test_a_project_may_repeat_or_switch_off_the_users_mcp_server(
        project: Path, env: dict[str, str]) -> None:
    _global_file(env, "[mcp_servers.docs]", 'command = "docs-server"')
    _project_file(project, "[mcp_servers.docs]", 'command = "docs-server"')
    assert load_settings({}, cwd=project, env=env).held_back == {}
    _project_file(project, "[mcp_servers.docs]", 'command = "docs-server"', "enabled = false")
    off = load_settings({}, cwd=project, env=env)
    assert off.held_back == {} and off.mcp_servers["docs"]["enabled"] is False
    _project_file(project, "[mcp_servers.docs]", 'command = "other-server"')
    assert set(load_settings({}, cwd=project, env=env).held_back) == {"mcp_servers"}


def test_the_check_sees_the_file_and_the_keys(project: Path, env: dict[str, str]) -> None:
    file = _project_file(project, "yolo = true", 'commands = "all"', "retries = 1")
    seen: list[tuple[Path, dict[str, Any]]] = []
    load_settings({}, cwd=project, env=env, trusted=lambda f, k: seen.append((f, dict(k))) or 0)
    assert seen == [(file, {"yolo": True, "commands": "all"})]


def test_global_env_cli_and_explicit_config_are_always_trusted(
        project: Path, env: dict[str, str], tmp_path: Path) -> None:
    _global_file(env, "yolo = true", f'add_dir = ["{OUTSIDE}"]', 'base_url = "http://g:1"')
    from_global = load_settings({}, cwd=project, env=env)
    assert from_global.yolo and from_global.add_dir == (OUTSIDE,)
    assert from_global.base_url == "http://g:1" and from_global.held_back == {}

    from_env = load_settings({}, cwd=project, env={**env, "SWIVAL_COMMANDS": "all"})
    assert from_env.commands == "all" and from_env.held_back == {}

    from_cli = load_settings({"commands": "all", "api_key": "sk-cli-123456789"}, cwd=project,
                             env=env)
    assert from_cli.commands == "all" and from_cli.api_key == "sk-cli-123456789"

    chosen = tmp_path / "mine.toml"
    chosen.write_text('commands = "all"\nadd_dir_ro = ["/x"]\n', encoding="utf-8")
    _project_file(project, "yolo = false")
    explicit = load_settings({}, cwd=project, env=env, config_path=chosen)
    assert explicit.commands == "all" and explicit.add_dir_ro == ("/x",)
    assert explicit.held_back == {}


def test_untrusted_project_cannot_override_the_users_own_choice(
        project: Path, env: dict[str, str]) -> None:
    _global_file(env, 'base_url = "http://127.0.0.1:8080"', 'commands = "git"')
    _project_file(project, 'base_url = "http://203.0.113.9:1"', 'commands = "all"')
    settings = load_settings({}, cwd=project, env=env)
    assert settings.base_url == "http://127.0.0.1:8080" and settings.commands == "git"
    assert set(settings.held_back) == {"base_url", "commands"}


def test_a_key_the_command_line_overrides_is_not_reported(
        project: Path, env: dict[str, str]) -> None:
    _project_file(project, 'commands = "all"', "yolo = true")
    settings = load_settings({"commands": "none"}, cwd=project, env=env)
    assert settings.commands == "none" and dict(settings.held_back) == {"yolo": True}


def test_hosted_model_string_from_the_project_needs_trust(
        project: Path, env: dict[str, str]) -> None:
    _project_file(project, 'model = "openrouter/anthropic/claude-sonnet-4"')
    untrusted = load_settings({}, cwd=project, env=env)
    record("untrusted config key", 'model = "openrouter/…" (hosted)', "in-process",
           escaped=hosted_model(untrusted))
    assert untrusted.model is None and not hosted_model(untrusted)
    assert dict(untrusted.held_back) == {"model": "openrouter/anthropic/claude-sonnet-4"}
    trusted = load_settings({}, cwd=project, env=env, trusted=_trust_all)
    assert hosted_model(trusted)
    # A local server the user chose: the same string is just a model name there.
    local = load_settings({"base_url": "http://127.0.0.1:1234"}, cwd=project, env=env)
    assert local.model == "openrouter/anthropic/claude-sonnet-4" and local.held_back == {}


def test_project_provider_that_turns_the_users_model_hosted_needs_trust(
        project: Path, env: dict[str, str]) -> None:
    _global_file(env, 'model = "openai/gpt-oss-20b"')  # an LM Studio model key: local
    _project_file(project, 'provider = "generic"')
    settings = load_settings({}, cwd=project, env=env)
    record("untrusted config key", 'provider = "generic" (makes the model hosted)',
           "in-process", escaped=hosted_model(settings))
    assert settings.provider == "lmstudio" and not hosted_model(settings)
    assert dict(settings.held_back) == {"provider": "generic"}
    _project_file(project, 'provider = "generic"', 'base_url = "http://203.0.113.9:1"')
    both = load_settings({}, cwd=project, env=env)
    assert set(both.held_back) == {"provider", "base_url"} and not hosted_model(both)


def test_local_model_names_and_providers_need_no_trust(
        project: Path, env: dict[str, str]) -> None:
    _project_file(project, 'provider = "ollama"', 'model = "qwen2.5-coder:7b"')
    settings = load_settings({}, cwd=project, env=env)
    assert (settings.provider, settings.model) == ("ollama", "qwen2.5-coder:7b")
    assert settings.held_back == {}


def test_record_then_check_and_a_change_invalidates(project: Path, env: dict[str, str]) -> None:
    file = _project_file(project, "yolo = true", f'add_dir = ["{OUTSIDE}"]')
    store = TrustStore.for_user(env)
    first = load_settings({}, cwd=project, env=env, trusted=store.check)
    assert set(first.held_back) == {"yolo", "add_dir"} and store.recorded(file) is None
    store.record(file, first.held_back)
    again = load_settings({}, cwd=project, env=env, trusted=store.check)
    assert again.yolo and again.add_dir == (OUTSIDE,) and again.held_back == {}

    _project_file(project, "yolo = true", 'add_dir = ["/other"]', 'commands = "all"')
    edited = load_settings({}, cwd=project, env=env, trusted=store.check)
    assert not edited.yolo and edited.add_dir == () and edited.commands == "ask"
    assert store.changes(file, edited.held_back) == {"add_dir": "changed", "commands": "added"}
    notice = ignored_notice(edited, store) or ""
    assert "changed since you trusted it (add_dir changed, commands added)" in notice
    assert "--trust" in notice

    _project_file(project, "yolo = true")  # a key removed: what is left was trusted
    assert load_settings({}, cwd=project, env=env, trusted=store.check).yolo


def test_record_is_private_atomic_and_holds_no_values(project: Path, env: dict[str, str]) -> None:
    file = _project_file(project, 'api_key = "sk-from-the-repo-123456"')
    store = TrustStore.for_user(env)
    store.record(file, {"api_key": "sk-from-the-repo-123456"})
    text = store.path.read_text(encoding="utf-8")
    assert "sk-from-the-repo" not in text and str(file.resolve()) in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert [p.name for p in store.path.parent.iterdir()] == [store.path.name]  # no temp left
    assert store.check(file, {"api_key": "sk-from-the-repo-123456"})
    assert not store.check(file, {"api_key": "sk-another-one-123456"})


def test_forget_and_a_broken_record(project: Path, env: dict[str, str]) -> None:
    file = _project_file(project, "yolo = true")
    store = TrustStore.for_user(env)
    store.record(file, {"yolo": True})
    other = project.parent / "other" / "swival.toml"
    store.record(other, {"yolo": True})
    assert store.forget(file) and not store.forget(file)
    assert not store.check(file, {"yolo": True}) and store.check(other, {"yolo": True})

    store.path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings({}, cwd=project, env=env, trusted=store.check)
    assert str(store.path) in str(info.value) and "delete it" in str(info.value)
    assert store.path.read_text(encoding="utf-8") == "{not json"  # nothing lost
    store.path.write_text(json.dumps(["a list"]), encoding="utf-8")
    with pytest.raises(ConfigError, match="not a record of trusted projects"):
        store.recorded(file)


def test_unwritable_record_is_a_clear_error(project: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("", encoding="utf-8")
    store = TrustStore(blocker / "swival" / "trusted-projects.json")
    with pytest.raises(ConfigError, match="could not record trust in"):
        store.record(project / "swival.toml", {"yolo": True})


def test_question_shows_keys_values_and_hides_secrets(project: Path, env: dict[str, str]) -> None:
    _project_file(project, "yolo = true", f'add_dir = ["{OUTSIDE}"]',
                  'api_key = "sk-from-the-repo-123456"')
    settings = load_settings({}, cwd=project, env=env)
    text = question(settings, TrustStore.for_user(env))
    assert str(project / "swival.toml") in text
    assert "    yolo = true\n" in text and f'    add_dir = ["{OUTSIDE}"]\n' in text
    assert "api_key = (a secret, not shown)" in text and "sk-from" not in text
    assert "changed since" not in text
    store = TrustStore.for_user(env)
    store.record(settings.project_file, {"yolo": True, "add_dir": ("/before",)})
    again = question(settings, store)
    assert again.startswith(f"{settings.project_file} changed since you trusted it "
                            "(add_dir changed, api_key added).")


def test_literal_key_warning_also_when_held_back(project: Path, env: dict[str, str]) -> None:
    _project_file(project, 'api_key = "sk-literal-123456789"')
    settings = load_settings({}, cwd=project, env=env)
    assert settings.api_key is None
    assert "environment variable" in (literal_key_warning(settings) or "")


def test_a_symlink_to_a_trusted_file_does_not_carry_its_trust(
        project: Path, env: dict[str, str], tmp_path: Path) -> None:
    trusted_file = _project_file(project, 'commands = "all"')
    store = TrustStore.for_user(env)
    store.record(trusted_file, {"commands": "all"})
    other = tmp_path / "other-repo"
    (other / ".git").mkdir(parents=True)
    (other / "swival.toml").symlink_to(trusted_file)
    settings = load_settings({}, cwd=other, env=env, trusted=store.check)
    assert settings.commands == "ask" and dict(settings.held_back) == {"commands": "all"}
    linked_root = tmp_path / "link-to-repo"
    linked_root.symlink_to(project)  # the same project reached through a link: still trusted
    assert load_settings({}, cwd=linked_root, env=env, trusted=store.check).commands == "all"
