"""The installed command's contract: help, version, usage and config errors, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def swival(*args: str, cwd: Path, stdin: str = "", env: dict[str, str] | None = None,
           ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "XDG_CONFIG_HOME": str(cwd / ".xdg"), "NO_COLOR": "1",
                **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "swival", *args], cwd=cwd, input=stdin, text=True,
        capture_output=True, env=full_env, timeout=60,
    )


def test_help_and_version_do_not_import_litellm(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from swival.cli import main\n"
        "for argv in (['swival', '--help'], ['swival', '--version']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('LITELLM', any(m.split('.')[0] == 'litellm' for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert "--max-context-tokens" in out.stdout
    assert "LITELLM False" in out.stdout


def test_the_repl_prompt_waits_for_no_heavy_import(fake_server: Any, tmp_path: Path) -> None:
    """Everything the REPL builds before its prompt appears loads neither litellm, nor httpx,
    nor the tokenizer: those load in the background once the prompt is drawn."""
    server = fake_server(kind="llamacpp")
    code = (
        "import sys\n"
        "from swival.config import load_settings\n"
        "from swival.session import open_session\n"
        "from swival.repl import Repl\n"
        "settings = load_settings({'provider': 'llamacpp', 'base_url': sys.argv[1]})\n"
        "Repl(open_session(settings, interactive=True))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'httpx', "
        "'tiktoken'}))\n"
    )
    (tmp_path / ".git").mkdir()
    out = subprocess.run([sys.executable, "-c", code, server.url], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_version(tmp_path: Path) -> None:
    from swival import __version__

    result = swival("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"swival {__version__}"


def test_help_lists_exit_codes(tmp_path: Path) -> None:
    result = swival("--help", cwd=tmp_path)
    assert result.returncode == 0
    for flag in ("--prompt", "--provider", "--base-url", "--model", "--api-key",
                 "--max-output-tokens", "--max-turns", "--quiet", "--json", "--yolo",
                 "--config", "--version"):
        assert flag in result.stdout
    assert "130 interrupted (Ctrl-C), 143 terminated" in " ".join(result.stdout.split())


def test_bad_config_exits_2_naming_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "swival.toml").write_text('max_turns = "many"\n')
    result = swival("-p", "hi", cwd=tmp_path)
    assert result.returncode == 2
    assert "swival.toml" in result.stderr and "max_turns" in result.stderr
    assert "an integer" in result.stderr
    assert "Traceback" not in result.stderr


def test_config_syntax_error_exits_2(tmp_path: Path) -> None:
    (tmp_path / "swival.toml").write_text("model = [\n")
    result = swival("-p", "hi", cwd=tmp_path)
    assert result.returncode == 2
    assert "not valid TOML" in result.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "expected"),
    [
        (("--no-such-flag",), "", "No such option"),
        (("-p", "a", "b"), "", "not both"),
        ((), "   \n", "No task"),
        (("-p", ""), "a piped task is not taken instead", "The task given is empty."),
        (("  ",), "", "The task given is empty."),
        (("--resume", "x", "-c", "-p", "hi"), "", "Give either --resume ID or --continue (-c), "
                                                  "not both."),
        (("--max-turns", "zero", "-p", "x"), "", "'--max-turns': it must be a whole number"),
        (("--temperature", "hot", "-p", "x"), "", "'--temperature': it must be a number"),
        (("--output-format", "xml", "-p", "x"), "", "'--output-format': 'xml' is not one of"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: tuple[str, ...], stdin: str,
                             expected: str) -> None:
    result = swival(*args, cwd=tmp_path, stdin=stdin)
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert "Value error" not in result.stderr and "Input should" not in result.stderr


def test_init_config_writes_a_valid_starter_and_refuses_to_overwrite(tmp_path: Path) -> None:
    result = swival("--init-config", "project", "--provider", "ollama", "--model", "m:7b",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "swival.toml").read_text()
    assert 'provider = "ollama"' in text and 'model = "m:7b"' in text
    from swival.config import read_toml

    assert read_toml(tmp_path / "swival.toml")["provider"] == "ollama"
    again = swival("--init-config", "project", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_init_config_global_uses_xdg(tmp_path: Path) -> None:
    result = swival("--init-config", "global", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".xdg" / "swival" / "config.toml").is_file()


def test_help_names_every_option_plainly(tmp_path: Path) -> None:
    text = swival("--help", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    assert "list[str]" not in text
    for shown in ("--add-dir <dir>", "--add-dir-ro <dir>", "--pass-env <name>",
                  "--output-format <text|json|stream-json>",
                  "--init-config <project|global|stdout>"):
        assert shown in text, shown
    assert "--no-proactive-summaries Summarize every 10 turns" in " ".join(text.split())


def test_doctor_is_a_word_too(fake_server: Any, tmp_path: Path) -> None:
    """`swival doctor` checks the setup instead of sending "doctor" to the model."""
    server = fake_server(kind="llamacpp", window=8192)
    result = swival("--provider", "llamacpp", "--base-url", server.url, "doctor",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "window           8192 tokens" in result.stdout
    assert server.requests == []  # no chat call: nothing went to the model


def test_init_config_stdout_prints_a_starter_documenting_every_key(tmp_path: Path) -> None:
    import tomllib

    from swival.config import KEYS

    result = swival("--init-config", "stdout", "--provider", "ollama", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert tomllib.loads(result.stdout)["provider"] == "ollama"
    for key in KEYS:
        assert f"# {key.name} =" in result.stdout or f"[{key.name}." in result.stdout, key.name
    assert not (tmp_path / "swival.toml").exists()
    written = swival("--init-config", "project", "--provider", "ollama", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "swival.toml").read_text() == result.stdout


def test_shell_completion(tmp_path: Path) -> None:
    script = swival("--show-completion", "bash", cwd=tmp_path)
    assert script.returncode == 0 and "_SWIVAL_COMPLETE=complete_bash" in script.stdout
    words = swival(cwd=tmp_path, env={"_SWIVAL_COMPLETE": "complete_bash",
                                      "COMP_WORDS": "swival --output-format ",
                                      "COMP_CWORD": "2"})
    assert words.stdout.split() == ["text", "json", "stream-json"]
    home = tmp_path / "home"
    home.mkdir()
    installed = swival("--install-completion", "bash", cwd=tmp_path, env={"HOME": str(home)})
    assert installed.returncode == 0, installed.stderr
    assert "swival" in (home / ".bashrc").read_text()
