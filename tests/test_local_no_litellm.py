"""A whole local run never imports litellm: the installed `swival`, one-shot (`--json`) and
one REPL turn in a real pseudo-terminal, against LM Studio, llama.cpp and a generic
OpenAI-compatible server (`--base-url`) on loopback.

Each process reports every top-level module it imported (tests/importwatch/sitecustomize.py);
the report must show that it ran (`started`), that the direct transport loaded (`httpx`),
and no `litellm`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import run_swival
from tests.fakeserver import FakeServer, text, tool

WATCH = Path(__file__).resolve().parent / "importwatch"
PROMPT = "›"
SWIVAL = shutil.which("swival")
KINDS = ("lmstudio", "llamacpp", "generic")


def watched_env(log: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(WATCH), path) if p),
            "SWIVAL_IMPORT_LOG": str(log)}


def server_args(server: FakeServer, kind: str) -> list[str]:
    url = server.v1_url if kind == "generic" else server.url
    return ["--provider", kind, "--base-url", url]


def imported(log: Path) -> list[str]:
    names = log.read_text(encoding="utf-8").split()
    assert names[:1] == ["started"], "the import report did not run"
    assert "httpx" in names, "the report missed the transport's own import"
    return names


def make_server(fake_server: Any, kind: str) -> FakeServer:
    server: FakeServer = fake_server(kind="openai" if kind == "generic" else kind,
                                     window=16_384)
    return server


@pytest.mark.parametrize("kind", KINDS)
def test_one_shot_json_never_imports_litellm(fake_server: Any, tmp_path: Path,
                                             kind: str) -> None:
    server = make_server(fake_server, kind)
    server.script(tool("list_files", path="."), text("Two files."))
    (tmp_path / "a.py").write_text("print(1)\n")
    log = tmp_path / "imports.log"
    result = run_swival(None, tmp_path, *server_args(server, kind), "--json",
                        "-p", "list the files", env=watched_env(log))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"] == "Two files." and report["cost_usd"] is None
    assert len(server.requests) == 2
    assert "litellm" not in imported(log)


@pytest.mark.skipif(SWIVAL is None, reason="install first: pip install -e . --no-deps")
@pytest.mark.timeout(90)
@pytest.mark.parametrize("kind", KINDS)
def test_repl_turn_never_imports_litellm(fake_server: Any, tmp_path: Path, kind: str) -> None:
    pexpect = pytest.importorskip("pexpect")
    server = make_server(fake_server, kind)
    server.script(text("The answer is four."))
    (tmp_path / ".git").mkdir()
    log = tmp_path / "imports.log"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
           "NO_COLOR": "1", "TERM": "xterm-256color", **watched_env(log)}
    child = pexpect.spawn(SWIVAL, server_args(server, kind), cwd=str(tmp_path), env=env,
                          encoding="utf-8", dimensions=(40, 120), timeout=30)
    child.expect_exact(PROMPT)
    child.send("what is two and two?\r")
    child.expect_exact("The answer is four.")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "litellm" not in imported(log)
