"""Fault injection: each fault has a defined outcome, a clear message, and leaves an intact,
valid transcript. The installed `swival` runs against the loopback FakeServer."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from swival.context.transcript import replay
from tests.e2e import (
    assert_valid_chat,
    bwrap_problem,
    gone,
    pids_of,
    run_swival,
    swival_command,
    unique_sleep,
)
from tests.evidence import record
from tests.fakeserver import Reply, error, text, tool

SECRET = "sk-test-9f8e7d6c5b4a39281706"
SANDBOX_PROBLEM = bwrap_problem()
MARKER = "[redacted:OPENROUTER_API_KEY]"


def transcripts(root: Path) -> list[Path]:
    return sorted((root / ".swival" / "sessions").glob("*.jsonl"))


def assert_transcript_intact(root: Path) -> None:
    """Every line is JSON and the history it rebuilds is valid chat."""
    found = transcripts(root)
    assert found, "a transcript was written"
    for path in found:
        for line in path.read_text(encoding="utf-8").splitlines():
            json.loads(line)
        assert_valid_chat([m.to_dict() for m in replay(path).history])


def test_server_dies_mid_stream_then_recovers(fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="llamacpp").script(Reply(mode="die"), text("recovered"))
    result = run_swival(server, tmp_path, "-p", "hi")
    assert (result.returncode, result.stdout) == (0, "recovered\n")
    assert len(server.requests) == 2
    assert_transcript_intact(tmp_path)


def test_server_keeps_dying_gives_a_clear_error(fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="llamacpp").script(*[Reply(mode="die")] * 3)
    result = run_swival(server, tmp_path, "--retries", "2", "-p", "hi")
    assert result.returncode == 1
    assert server.url in result.stderr and "attempts" in result.stderr
    assert "Traceback" not in result.stderr
    assert_transcript_intact(tmp_path)


def test_bursts_of_429_and_500_are_retried(fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="lmstudio").script(
        error(429, "slow down"), error(500, "oops"), error(503, "busy"), text("finally"))
    result = run_swival(server, tmp_path, "-p", "hi")
    assert (result.returncode, result.stdout) == (0, "finally\n")
    assert len(server.requests) == 4
    waits = [b - a for a, b in zip(server.times, server.times[1:], strict=False)]
    for wait, nominal in zip(waits, (0.5, 1.0, 2.0), strict=True):  # backoff, +/-25 % jitter
        assert 0.75 * nominal - 0.05 <= wait <= 1.25 * nominal + 1.0, waits


def test_retry_after_is_honoured_and_capped(fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="llamacpp").script(
        error(429, "slow down", retry_after="2"), error(503, "loading", retry_after="3600"),
        text("served"))
    result = run_swival(server, tmp_path, "--retry-after-max", "1", "-p", "hi")
    assert (result.returncode, result.stdout) == (0, "served\n"), result.stderr
    first, second = (b - a for a, b in zip(server.times, server.times[1:], strict=False))
    assert 1.0 <= first < 2.5 and 1.0 <= second < 2.5  # both asked for more than the cap


def test_hanging_server_times_out_with_a_clear_message(fake_server: Any, tmp_path: Path,
                                                       ) -> None:
    server = fake_server(kind="llamacpp").script(*[Reply(mode="hang", hang=20)] * 2)
    started = time.monotonic()
    result = run_swival(server, tmp_path, "--request-timeout", "1", "--retries", "1", "-p",
                        "hi")
    record("hang", "a server that accepts the request and sends nothing", "swival",
           hung=time.monotonic() - started >= 30, traceback="Traceback" in result.stderr)
    assert result.returncode == 1
    assert time.monotonic() - started < 30
    assert "Traceback" not in result.stderr and server.url in result.stderr
    assert_transcript_intact(tmp_path)


MID_REPLY_BREAKS = {
    "truncated": Reply(text="partial answer", mode="truncated"),
    "malformed": Reply(raw=(
        'data: {"choices": [{"index": 0, "delta": {"content": "partial "}}]}\n\n',
        'data: {"choices": [{"index": 0, "delta": {"content": "answer"}}]}\n\n',
        "data: {not json at all\n\n")),
    "die": Reply(text="partial answer that is long enough to be cut", chunk=3, mode="die"),
}


@pytest.mark.parametrize("mode", sorted(MID_REPLY_BREAKS))
def test_broken_bodies_are_retried(fake_server: Any, tmp_path: Path, mode: str) -> None:
    """Text had streamed before the break, but nobody saw it (one-shot shows only the final
    answer): the reply is asked for again and the run succeeds."""
    server = fake_server(kind="llamacpp").script(MID_REPLY_BREAKS[mode], text("clean answer"))
    result = run_swival(server, tmp_path, "-p", "hi")
    assert (result.returncode, result.stdout) == (0, "clean answer\n"), result.stderr
    assert "Traceback" not in result.stderr and "The reply was cut" in result.stderr
    assert len(server.requests) == 2
    assert_transcript_intact(tmp_path)


def test_dropped_stream_is_retried_in_json_mode(fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(kind="llamacpp").script(MID_REPLY_BREAKS["die"], text("clean answer"))
    result = run_swival(server, tmp_path, "--json", "-p", "hi")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["answer"], report["exit_reason"]) == ("clean answer", "done")
    assert result.stderr == "" and len(server.requests) == 2


def test_invalid_tool_arguments_go_back_to_the_model(fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    server = fake_server(kind="llamacpp").script(
        Reply(tool_calls=(("read_file", '{"file_path": "a.txt"'),)),   # repairable
        Reply(tool_calls=(("read_file", '{"file_path": a.txt, offset: }'),)),  # not
        Reply(tool_calls=(("read_fil", {"file_path": "a.txt"}),)),     # unknown name
        text("done"))
    result = run_swival(server, tmp_path, "-p", "read a.txt")
    assert (result.returncode, result.stdout) == (0, "done\n"), result.stderr
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    note, _, content = results[0].partition("\n")  # the model is told what was repaired
    assert note == "[note: this call was repaired before it ran: unclosed brackets]"
    assert "alpha" in content
    assert results[1].startswith("error:") and "JSON" in results[1]
    assert "Did you mean `read_file`" in results[2]
    assert "Repaired: the arguments of read_file (unclosed brackets)." in result.stderr
    assert_transcript_intact(tmp_path)


def test_write_cut_by_the_output_limit_writes_nothing(fake_server: Any, tmp_path: Path) -> None:
    cut = '{"file_path": "big.py", "content": "def main():\\n    for i in range(10):\\n      '
    server = fake_server(kind="llamacpp", window=32768).script(
        Reply(tool_calls=(("write_file", cut),), finish_reason="length", usage=(2000, 4096)),
        text("I will write it in parts."))
    result = run_swival(server, tmp_path, "--yolo", "-p", "write big.py")
    assert (result.returncode, result.stdout) == (0, "I will write it in parts.\n"), result.stderr
    assert not (tmp_path / "big.py").exists()
    (answer,) = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert answer.startswith("error:") and "output limit" in answer and "smaller" in answer


def _small_files_limit() -> None:
    """Files may not grow past 64 KB: writing more fails with EFBIG, like a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))


def test_disk_fills_while_output_is_captured(fake_server: Any, tmp_path: Path) -> None:
    """Simulated with a 64 KB file-size limit: the command's output capture and the spill
    both hit it. The model still gets the head of the output and what went wrong."""
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="seq 1 200000"), text("saw the numbers"))
    result = run_swival(server, tmp_path, "--yolo", "-p", "count",
                        preexec_fn=_small_files_limit)
    assert (result.returncode, result.stdout) == (0, "saw the numbers\n"), result.stderr
    output = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert output.startswith("1\n2\n3\n")
    assert "SIGXFSZ" in output or "No space" in output or "too large" in output
    assert_transcript_intact(tmp_path)


def test_spill_directory_unusable(fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / ".swival").mkdir()
    (tmp_path / ".swival" / "out").write_text("a file where the spill directory should be")
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="seq 1 50000"), text("saw the numbers"))
    result = run_swival(server, tmp_path, "--yolo", "-p", "count")
    assert (result.returncode, result.stdout) == (0, "saw the numbers\n"), result.stderr
    output = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert output.startswith("1\n2\n3\n") and "50000" in output, "head and tail"


@pytest.mark.parametrize("sandbox", ["off", "on"])
def test_sigterm_mid_turn_stops_cleanly(fake_server: Any, tmp_path: Path, sandbox: str) -> None:
    if sandbox == "on" and SANDBOX_PROBLEM:
        pytest.skip(f"no working bubblewrap: {SANDBOX_PROBLEM}")
    marker, sleeper = tmp_path / "started", unique_sleep()
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command=f"{sleeper} & echo yes > {marker}; wait"), text("never"))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / ".xdg"), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [*swival_command(), "--provider", "llamacpp", "--base-url", server.url, "--yolo",
         "--sandbox", sandbox, "-p", "sleep"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not marker.exists() or not pids_of(sleeper):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            told = [m["content"] for body in server.requests for m in body["messages"]
                    if m["role"] == "tool"]
            pytest.fail(f"swival ended or stalled before the command ran (exit code "
                        f"{proc.returncode}); stderr: {err[-1500:]!r}; the model was told: "
                        f"{told!r}")
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "terminated" in err and "Traceback" not in err
    assert gone(sleeper)
    assert_transcript_intact(tmp_path)


def test_no_api_key_leaks_into_any_artefact(fake_server: Any, tmp_path: Path) -> None:
    """The key is in the environment, on the command line, in a file the model reads,
    edits and writes back, in a file big enough to be spilled by the context layer, in
    command output big enough to be spilled by the tool, in a server error and in the
    model's own answer. It must appear in no file Swival writes (project and user
    state), no output, no request; the file that held it must still hold it."""
    (tmp_path / ".git").mkdir()
    env_file = tmp_path / "deploy.env"
    env_file.write_text(f"OPENROUTER_API_KEY={SECRET}\nregion=eu\n")
    (tmp_path / "big.txt").write_text("".join(
        f"line {i}" + (f" token={SECRET}" if i == 2000 else "") + "\n" for i in range(6000)))
    server = fake_server(kind="llamacpp").script(
        tool("run_command", command="cat deploy.env; env; seq 1 3000"),
        tool("read_file", file_path="deploy.env"),
        tool("write_file", file_path="deploy.env",
             content=f"OPENROUTER_API_KEY={MARKER}\nregion=us\n"),
        tool("edit_file", file_path="deploy.env", old_string=f"OPENROUTER_API_KEY={MARKER}",
             new_string=f"# the key\nOPENROUTER_API_KEY={MARKER}"),
        tool("read_file", file_path="big.txt"),
        tool("grep", pattern="token="),
        text(f"Done; the key was {SECRET}."))
    env = {"OPENROUTER_API_KEY": SECRET}
    # --pass-env lets the key into the commands' environment, so that redaction is what
    # keeps it out of everything written (tests/test_sandbox_e2e.py covers its absence).
    first = run_swival(server, tmp_path, "--yolo", "--json", "--api-key", SECRET,
                       "--pass-env", "OPENROUTER_API_KEY", "-p", "print the environment",
                       env=env)
    failing = fake_server(kind="llamacpp").script(error(400, f"unknown field near {SECRET}"))
    second = run_swival(failing, tmp_path, "--retries", "0", "--api-key", SECRET, "-p",
                        "again", env=env)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 1 and MARKER in second.stderr, second.stderr
    assert env_file.read_text() == f"# the key\nOPENROUTER_API_KEY={SECRET}\nregion=us\n"
    spilled = [p.name for p in (tmp_path / ".swival" / "out").rglob("*.txt")]
    assert any(n.startswith("cmd-") for n in spilled), "the tool spilled the command output"
    assert any(n.startswith("read_file-") for n in spilled), "the context layer spilled"

    # The copies /undo restores are the one exception (unredacted, owner-only, unreadable
    # to the model's tools; tests/test_undo.py): they must put the real value back.
    undo = tmp_path / ".swival" / "undo"
    copies = list(undo.rglob("*.bin"))
    assert copies and all(p.stat().st_mode & 0o077 == 0 for p in undo.rglob("*"))
    state_files = [p for p in (tmp_path / ".swival").rglob("*")
                   if p.is_file() and p not in copies]
    state_files += [p for p in Path(os.environ["XDG_STATE_HOME"]).rglob("*") if p.is_file()]
    artefacts = {str(p): p.read_text(errors="replace") for p in state_files}
    artefacts |= {"stdout 1": first.stdout, "stderr 1": first.stderr,
                  "stdout 2": second.stdout, "stderr 2": second.stderr}
    artefacts |= {f"request {n}": json.dumps(r)
                  for n, r in enumerate([*server.requests, *failing.requests])}
    found = [name for name, text_ in artefacts.items() if SECRET in text_]
    record("secret leak", "one run offering the key eight ways (environment, --api-key, a "
           "file read, edited and written back, a context spill, a command spill, a server "
           "error, the model's answer)", "swival", secrets=len(found),
           traceback="Traceback" in first.stderr + second.stderr)
    assert found == []
    assert all(MARKER in json.dumps(r) for r in server.requests[1:]), "redacted, not dropped"
    report = json.loads(first.stdout)
    assert MARKER in report["answer"]
    assert MARKER in artefacts[str(tmp_path / ".swival" / "sessions" /
                                   f"{report['session_id']}.jsonl")]


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/hostname", "link/secret.txt",
                                  "sub/../../outside.txt", ".git/config"])
def test_path_escapes_are_refused(fake_server: Any, tmp_path: Path, path: str) -> None:
    """Read, write and edit each path. Reading `.git/config` is allowed by design (the
    workspace is readable, .git included), so that read is checked to succeed and is not
    counted as an escape attempt: 14 attempts in all."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core] secret\n")
    (tmp_path / "outside.txt").write_text("outside secret\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.txt").write_text("linked secret\n")
    (project / "link").symlink_to(tmp_path / "elsewhere")
    server = fake_server(kind="llamacpp").script(
        tool("read_file", file_path=path),
        tool("write_file", file_path=path, content="overwritten"),
        tool("edit_file", file_path=path, old_string="secret", new_string="pwned"),
        text("done"))
    result = run_swival(server, project, "--yolo", "-p", "escape")
    read, write, edit = [m["content"] for m in server.requests[-1]["messages"]
                         if m["role"] == "tool"]
    untouched = ((tmp_path / "outside.txt").read_text() == "outside secret\n"
                 and (tmp_path / "elsewhere" / "secret.txt").read_text() == "linked secret\n"
                 and (project / ".git" / "config").read_text() == "[core] secret\n")
    attempts = {"write_file": write, "edit_file": edit}
    if path != ".git/config":
        attempts["read_file"] = read
    for name, answer in attempts.items():
        leaked = "outside secret" in answer or "linked secret" in answer
        record("path escape", f"{name} {path}", "swival",
               escaped=leaked or not untouched or not answer.startswith("error:"),
               traceback="Traceback" in result.stderr)
    assert result.returncode == 0, result.stderr
    assert all(answer.startswith("error:") for answer in attempts.values()), attempts
    if path == ".git/config":
        assert read == "1\t[core] secret", "reading inside .git is allowed"
    assert "outside secret" not in read and "linked secret" not in read
    assert untouched
