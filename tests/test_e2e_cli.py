"""The installed `swival` in one-shot mode against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import assert_valid_chat, request_text, run_swival
from tests.fakeserver import Reply, text, tool


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("print('hello')\n")
    return tmp_path


def edit_script() -> list[Reply]:
    return [
        tool("read_file", file_path="app.py"),
        tool("edit_file", file_path="app.py", old_string="hello", new_string="bye"),
        tool("run_command", command="python3 app.py"),
        text("Done: it prints bye."),
    ]


def test_read_edit_run_answer(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp", window=8192).script(*edit_script())
    result = run_swival(server, project, "--yolo", "--prompt", "make it say bye")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done: it prints bye.\n"
    assert (project / "app.py").read_text() == "print('bye')\n"
    assert "run_command python3 app.py — exit 0" in result.stderr
    assert "window 8192 tokens (llama.cpp /props n_ctx)" in result.stderr
    last = server.requests[-1]["messages"]
    assert last[-1]["role"] == "tool" and "bye" in last[-1]["content"]
    assert_valid_chat(last)
    assert all(len(r["tools"]) == 11 for r in server.requests)  # task included


def test_json_report(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="lmstudio", window=16384).script(*edit_script())
    result = run_swival(server, project, "--yolo", "--json", "-p", "make it say bye")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"] == "Done: it prints bye."
    assert report["exit_reason"] == "done" and report["exit_code"] == 0
    assert report["turns"] == 4 and report["tool_calls"] == 3
    assert report["files_changed"] == [{"path": "app.py", "change": "modified"}]
    assert report["window"] == 16384 and "LM Studio" in report["window_source"]
    assert report["tokens"]["prompt"] > 0 and report["compactions"] == []
    assert report["cost_usd"] is None  # a local server costs nothing we could price
    assert (project / ".swival" / "sessions" / f"{report['session_id']}.jsonl").is_file()


def test_quiet_prints_only_the_answer(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp").script(text("Just this."))
    result = run_swival(server, project, "-q", "hello")
    assert (result.returncode, result.stdout, result.stderr) == (0, "Just this.\n", "")


def test_task_on_stdin(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp").script(text("Read it."))
    result = run_swival(server, project, "-q", input="explain app.py\n")
    assert result.returncode == 0, result.stderr
    assert server.requests[0]["messages"][1]["content"] == "explain app.py"


def test_no_commands_without_a_terminal_or_yolo(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="touch created-by-command"), text("Could not run it."))
    result = run_swival(server, project, "-p", "touch a file")
    assert result.returncode == 0, result.stderr
    assert not (project / "created-by-command").exists()
    answer = server.requests[-1]["messages"][-1]
    assert answer["role"] == "tool" and "command refused" in answer["content"]
    assert "--yolo" in answer["content"] or "--commands" in answer["content"]


def test_allowlist_runs_only_listed_programs(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="echo allowed"),
        tool("run_command", command="touch nope"), text("ok"))
    result = run_swival(server, project, "--commands", "echo", "-p", "go")
    assert result.returncode == 0, result.stderr
    results = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "allowed" in results[0]["content"]
    assert "command refused" in results[1]["content"] and not (project / "nope").exists()


def test_dead_server_exits_3_naming_the_url(project: Path) -> None:
    result = run_swival(None, project, "--provider", "llamacpp", "--base-url",
                        "http://127.0.0.1:9/v1", "-p", "hi")
    assert result.returncode == 3
    assert "http://127.0.0.1:9" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_turn_limit_exits_4(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp").script(
        tool("list_files", path="."), tool("read_file", file_path="app.py"))
    result = run_swival(server, project, "--max-turns", "2", "-p", "loop")
    assert result.returncode == 4
    assert "--max-turns" in result.stderr
    server.script(tool("list_files", path="."), tool("read_file", file_path="app.py"))
    report = json.loads(run_swival(server, project, "--max-turns", "2", "--json",
                                   "-p", "loop").stdout)
    assert (report["exit_reason"], report["exit_code"], report["answer"]) == ("max_turns", 4, "")
    assert report["error"] == ("Stopped after 2 model calls without a final answer (raise "
                               "--max-turns to allow more).")


def test_continue_resumes_the_last_session(fake_server: Any, project: Path) -> None:
    server = fake_server(kind="llamacpp").script(text("The secret word is kiwi."),
                                                 text("You told me: kiwi."))
    assert run_swival(server, project, "-q", "remember kiwi").returncode == 0
    result = run_swival(server, project, "-q", "--continue", "what was the word?")
    assert result.returncode == 0, result.stderr
    roles = [m["role"] for m in server.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "remember kiwi" in request_text(server.requests[-1])
    missing = run_swival(server, project, "--resume", "nosuchid", "-p", "x")
    assert missing.returncode == 2 and "Recent sessions" in missing.stderr


def read_heavy(files: int) -> Any:
    """A fake model that reads `files` files one per turn, then answers."""
    def react(body: dict[str, Any]) -> Reply:
        reads = sum(1 for m in body["messages"] if m["role"] == "tool")
        if reads < files:
            return tool("read_file", file_path=f"src/mod{reads}.py")
        return text(f"Read {files} modules.")
    return react


def test_fifteen_step_read_heavy_session_fits_8k(fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for i in range(15):
        body = "".join(f"def function_{i}_{j}(value):\n    return value * {j} + {i}\n\n"
                       for j in range(120))
        (tmp_path / "src" / f"mod{i}.py").write_text(body)
    server = fake_server(kind="llamacpp", window=8192)
    server.script(*[read_heavy(15)] * 40)
    result = run_swival(server, tmp_path, "--json", "-p", "read every module in src/")
    report = json.loads(result.stdout)
    assert result.returncode == 0, result.stderr
    assert report["answer"] == "Read 15 modules." and report["tool_calls"] == 15
    assert all(len(r["tools"]) == 11 for r in server.requests), "tools offered on every request"
    assert all("exceed" not in json.dumps(r) for r in server.requests)
    assert report["compactions"], "8K cannot hold 15 such files without compaction"
    for body in server.requests:
        assert "read every module in src/" in request_text(body), "the task survives"
        assert_valid_chat(body["messages"])


def test_huge_file_and_huge_command_output_fit_8k(fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"row {i:06d} " + "x" * 60 + "\n"
                                              for i in range(2000)))  # ~140 KB
    assert (tmp_path / "big.txt").stat().st_size > 140_000
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("read_file", file_path="big.txt"),
        tool("run_command", command="python3 -c \"print('y' * 100 + '\\n', end='' ) \" ; "
                                    "seq 1 20000"),
        text("Both were large."))
    result = run_swival(server, tmp_path, "--yolo", "--json", "-p", "look at big things")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"] == "Both were large."
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "offset=" in results[0] and ".swival" in results[1]
    assert all(len(r) < 8000 for r in results)
    spilled = list((tmp_path / ".swival").rglob("*"))
    assert any(p.is_file() and p.stat().st_size > 100_000 for p in spilled)


def test_server_overflow_is_answered_by_compaction(fake_server: Any, tmp_path: Path) -> None:
    """We were told 16K but the server runs 4K: its exceed_context_size_error teaches us the
    real window, the engine compacts, and the retried request fits."""
    for i in range(4):
        (tmp_path / f"part{i}.txt").write_text(f"part {i} line\n" * 350)

    def model(body: dict[str, Any]) -> Any:  # recap requests come without tools
        if not body.get("tools"):
            return text("A recap of the parts read so far.")
        read = sum(1 for m in body["messages"] if m["role"] == "tool")
        return tool("read_file", file_path=f"part{read}.txt") if read < 4 else text(
            "All parts read.")

    server = fake_server(kind="llamacpp", window=4096).script(*[model] * 12)
    result = run_swival(server, tmp_path, "--max-context-tokens", "16384", "--json",
                        "-p", "read the parts")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"] == "All parts read."
    assert any("overflow" in c["reason"] for c in report["compactions"])
    # A server that states its window in an error does not cut prompts silently: a low
    # count after the rewrite is its tokenizer's, never a second, smaller window.
    assert "cut the prompt" not in result.stderr
    rejected = [r for r in server.requests if len(json.dumps(r)) // 4 > 4096]
    assert rejected, "the server did reject a request"
    assert len(json.dumps(server.requests[-1])) // 4 <= 4096


def test_json_report_when_the_server_is_down(project: Path) -> None:
    result = run_swival(None, project, "--provider", "llamacpp", "--base-url",
                        "http://127.0.0.1:9", "--json", "-p", "hi")
    assert result.returncode == 3
    report = json.loads(result.stdout)
    assert report["exit_code"] == 3 and report["exit_reason"] == "error"
    assert "http://127.0.0.1:9" in report["error"] and report["answer"] == ""
