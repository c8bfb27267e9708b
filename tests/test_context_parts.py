"""Token counting, budget, caps, ledger, compaction passes and the transcript."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swival.context import caps, passes
from swival.context.budget import Budget
from swival.context.calibration import Calibration, Reading
from swival.context.errorlines import error_lines
from swival.context.history import Facts, History
from swival.context.ledger import Ledger, error_line
from swival.context.tokens import TokenCounter, litellm_tokenizer_dir, load_encoder
from swival.context.transcript import Transcript, new_session_id, replay
from swival.messages import Message, ToolCall, ToolResult
from swival.state import spill_text

COUNTER = TokenCounter()


def code_text(lines: int, seed: int = 0) -> str:
    return "\n".join(f"def func_{seed}_{i}(x):  return x * {i} + {seed}  # line {i}"
                     for i in range(lines))


def test_tiktoken_is_used_offline_from_litellm_copies() -> None:
    assert litellm_tokenizer_dir() is not None
    env = {"PATH": os.environ.get("PATH", "")}
    assert load_encoder(env) is not None and env["TIKTOKEN_CACHE_DIR"].endswith("tokenizers")
    assert COUNTER.exact and COUNTER.text("hello world") == 2


def test_fallback_estimate_when_encoding_missing(tmp_path: Path) -> None:
    assert load_encoder({"TIKTOKEN_CACHE_DIR": str(tmp_path)}) is None
    estimate = TokenCounter(use_tiktoken=False)
    assert not estimate.exact and estimate.text("x" * 36) == 12
    sample = Path(__file__).read_text(encoding="utf-8")
    ratio = estimate.text(sample) / COUNTER.text(sample)
    assert 1.0 <= ratio < 1.7  # chars/3.0 over-counts ordinary code a little, never under


def test_message_counts_are_cached_per_object() -> None:
    message = Message(role="user", content="some text here")
    first = COUNTER.message(message)
    assert COUNTER.message(message) == first == 4 + COUNTER.text("some text here")
    call = ToolCall(id="1", name="read_file", arguments={"path": "a.py"})
    assert COUNTER.message(Message(role="assistant", tool_calls=(call,))) > 4


def test_budget_numbers_at_8k() -> None:
    budget = Budget(8192, 32768, 0.85, 0.6)
    assert budget.output_reserve == 1228 and budget.input_budget == 6964
    assert budget.trigger == 5919 and budget.target == 4178
    assert budget.reply_tokens(1000) == 8192 - 1000 - 163
    assert budget.reply_tokens(8100) == 0  # no room: never more than what is left
    assert Budget(8192, 500, 0.85, 0.6).reply_tokens(100) == 500  # the user's cap


def test_calibration_moving_average_and_clamp() -> None:
    calibration = Calibration()
    calibration.observe(Reading(1200, 1000, complete=True))
    assert calibration.factor == pytest.approx(1.04)
    for _ in range(100):
        calibration.observe(Reading(3900, 1000, complete=True))
    assert calibration.factor == 3.0
    calibration.observe(Reading(100_000, 1000, complete=True))  # another prompt entirely
    assert calibration.factor == 3.0
    calibration.jump(500, 1000)
    assert calibration.factor == 3.0  # a jump never lowers it


def _cap(content: str, meta: dict[str, object], tmp_path: Path) -> caps.Cut | None:
    return caps.cap_result(content, meta, 300, COUNTER.text,
                           lambda text: str(spill_text(text, tmp_path, "r")))


def test_small_result_passes_unchanged(tmp_path: Path) -> None:
    assert _cap("short", {"kind": "command"}, tmp_path) is None
    assert list(tmp_path.iterdir()) == []  # nothing saved


def test_command_preview_is_head_and_tail(tmp_path: Path) -> None:
    body = "$ make\n" + "\n".join(f"compiling module {i}" for i in range(800)) + "\nBUILD FAILED"
    cut = _cap(body, {"kind": "command"}, tmp_path)
    assert cut is not None and cut.saved is not None
    assert cut.text.startswith("$ make") and "BUILD FAILED" in cut.text
    assert COUNTER.text(cut.text) <= 300
    assert Path(cut.saved).read_text() == body and cut.saved in cut.text
    assert (cut.total_chars, cut.total_lines) == (len(body), 802)
    kept = [ln for ln in cut.text.splitlines() if ln.startswith(("$ make", "compiling", "BUILD"))]
    assert cut.kept_lines == len(kept) and cut.kept_chars < len(cut.text)


def test_file_preview_is_head_with_offset(tmp_path: Path) -> None:
    body = code_text(400)
    meta = {"kind": "file", "path": "big.py", "continue": "read big.py from line {line}"}
    cut = _cap(body, meta, tmp_path)
    assert cut is not None
    shown = cut.text.split("\n[output cut")[0].count("\n") + 1
    assert cut.text.startswith("def func_0_0") and cut.kept_lines == shown
    assert f"continue with read big.py from line {shown + 1}" in cut.text  # the tool's words


def test_matches_preview_keeps_leading_matches(tmp_path: Path) -> None:
    body = "\n".join(f"src/m{i}.py:{i}: needle" for i in range(900))
    cut = _cap(body, {"kind": "matches"}, tmp_path)
    assert cut is not None
    assert cut.text.startswith("src/m0.py:0: needle") and "src/m899.py" not in cut.text


def test_a_long_spill_path_costs_the_preview_little(tmp_path: Path) -> None:
    long_path = str(tmp_path / ("deep/" * 12) / "read_file-1.txt")
    for limit in (300, 600, 1200):
        cut = caps.cap_result(code_text(400), {"kind": "file", "path": "big.py"}, limit,
                              COUNTER.text, lambda t: long_path)
        assert cut is not None
        assert 0.93 * limit <= COUNTER.text(cut.text) <= limit, (limit, COUNTER.text(cut.text))


def test_spill_without_state_dir_says_not_saved() -> None:
    cut = caps.cap_result(code_text(400), {}, 200, COUNTER.text, lambda t: None)
    assert cut is not None and cut.saved is None and "not saved" in cut.text


def test_a_result_the_tool_saved_whole_is_not_saved_again(tmp_path: Path) -> None:
    """Fetched pages and MCP results arrive as the head of a text the tool saved whole:
    cut further, the notice names that file and its full size, and nothing is written."""
    head = code_text(300)
    meta = {"kind": "file", "path": ".swival/out/s/fetch-1.txt", "offset": 1,
            "continue": "read_file file_path=.swival/out/s/fetch-1.txt offset={line}",
            "spill_path": ".swival/out/s/fetch-1.txt", "total_chars": 200_000,
            "total_lines": 5000}
    cut = _cap(head, meta, tmp_path)
    assert cut is not None and cut.saved == ".swival/out/s/fetch-1.txt"
    assert (cut.total_chars, cut.total_lines) == (200_000, 5000)  # the whole text's
    assert cut.kept_chars < len(head)
    assert list(tmp_path.iterdir()) == []  # no second file holding only the head
    assert "200000 characters in full, saved to .swival/out/s/fetch-1.txt" in cut.text
    assert f"offset={cut.kept_lines + 1}" in cut.text
    assert str(len(head)) not in cut.text  # no head-only figure


def test_ledger_records_requests_files_commands_errors() -> None:
    ledger = Ledger()
    ledger.record_user("fix the parser")
    ledger.record_user("and add a test")
    call = ToolCall(id="1", name="run_command", arguments={"command": "pytest -x tests"})
    out = "collected 3 items\nE   AssertionError: 1 != 2\nFAILED tests/t.py::test_a - x\n"
    ledger.record_result(call, ToolResult(out, meta={"kind": "command", "exit_code": 1,
                                                      "command": call.arguments["command"]}))
    write = ToolCall(id="2", name="write_file", arguments={"path": "new.py"})
    ledger.record_result(write, ToolResult("ok", meta={"changed": [["new.py", "created"]]}))
    ledger.record_result(write, ToolResult("ok", meta={"changed": [["new.py", "modified"]]}))
    text = ledger.render()
    assert "fix the parser" in text and "- and add a test" in text
    assert "new.py (created)" in text and "`pytest -x tests` exit 1" in text
    assert "FAILED tests/t.py::test_a" in text


def test_error_line_prefers_specific_lines() -> None:
    assert error_line("Traceback (most recent call last):\n  x\nKeyError: 'a'\n") == "KeyError: 'a'"
    assert error_line("all good") is None
    assert error_line("==== 2 failed, 3 passed in 0.1s ====") is not None


PYTEST_RUN = """collected 54 items
sklearn/tests/test_search.py ...F..
    def test_grid(input):
>       with pytest.raises(error_type, message=error_message):
E       TypeError: Unexpected keyword arguments passed to pytest.raises: message
E       Use context-manager form instead?

sklearn/tests/test_search.py:138: TypeError
=================== 3 failed, 51 passed in 5.30s ===================
"""


def test_error_lines_keep_cause_and_outcome() -> None:
    assert error_lines(PYTEST_RUN) == [
        "E       TypeError: Unexpected keyword arguments passed to pytest.raises: message",
        "=================== 3 failed, 51 passed in 5.30s ===================",
    ]
    unittest_run = "Traceback (most recent call last):\nAttributeError: 'X' has no 'y'\n" \
        "----\nRan 26 tests in 1.0s\n\nFAILED (errors=2)\n"
    assert error_lines(unittest_run) == ["AttributeError: 'X' has no 'y'", "FAILED (errors=2)"]
    assert error_line("error: src/a.py: patch does not apply\n") == (
        "error: src/a.py: patch does not apply")
    assert error_line("- E999 SyntaxError: unmatched ')'\n") == "- E999 SyntaxError: unmatched ')'"


def test_error_lines_ignore_look_alikes() -> None:
    assert error_lines("=== Testing Error Cases ===\nall 3 cases ok\n") == []
    assert error_lines("    except ValueError:\n        raise TypeError(msg)\n") == []
    assert error_lines("Found 0 errors in 3 files\n") == []


def _run(ledger: Ledger, command: str, out: str, exit_code: int | None = 1) -> None:
    call = ToolCall(id="x", name="run_command", arguments={"command": command})
    ledger.record_result(call, ToolResult(out, meta={"kind": "command", "exit_code": exit_code,
                                                      "command": command}))


def test_ledger_keeps_newest_outcome_per_command() -> None:
    ledger = Ledger()
    _run(ledger, "pytest", "E   KeyError: 'a'\n")
    _run(ledger, "python repro.py", "NameError: name 'q' is not defined\n")
    _run(ledger, "pytest", "E   KeyError: 'b'\n")
    text = ledger.render()
    assert "KeyError: 'a'" not in text and "`pytest`: E   KeyError: 'b'" in text
    assert text.index("repro.py") < text.index("KeyError: 'b'")  # most recent last
    _run(ledger, "python  repro.py", "fixed\n", exit_code=0)
    assert "NameError: name 'q' is not defined (a later run exited 0)" in ledger.render()
    _run(ledger, "python -c 'import m'", "E   KeyError: 'b'\n")  # same error, new command
    assert ledger.render().count("KeyError: 'b'") == 1


def test_ledger_records_errors_of_failed_calls_only() -> None:
    """A successful command's output is not an error, however it reads: `cat` of a
    source file that handles KeyError, a grep for "Error:" lines. A failed run of the
    same command, or a tool error, is."""
    source = ("try:\n    value = table[key]\nexcept KeyError:\n    raise LookupError(key)\n"
              "# ValueError: raised when the key is empty\n")
    ledger = Ledger()
    _run(ledger, "cat src/table.py", source, exit_code=0)
    _run(ledger, "grep -rn Error: logs", "app.log:3: TypeError: bad operand\n", exit_code=0)
    read = ToolCall(id="r", name="read_file", arguments={"file_path": "src/table.py"})
    ledger.record_result(read, ToolResult(source, meta={"kind": "file", "path": "src/table.py"}))
    assert not ledger.errors and "Errors seen" not in ledger.render()
    _run(ledger, "python src/table.py", "Traceback (most recent call last):\n  x\n"
         "KeyError: 'a'\n", exit_code=1)
    missing = ToolCall(id="m", name="read_file", arguments={"file_path": "gone.py"})
    ledger.record_result(missing, ToolResult("error: gone.py does not exist", is_error=True,
                                             meta={"path": "gone.py"}))
    assert list(ledger.errors.items()) == [("python src/table.py", "KeyError: 'a'"),
                                           ("read_file gone.py",
                                            "error: gone.py does not exist")]


def test_ledger_errors_are_bounded_in_characters() -> None:
    small, large = Ledger.for_budget(6964), Ledger.for_budget(27852)
    assert small.error_chars < large.error_chars
    for n in range(40):
        _run(small, f"python step{n}.py", f"ValueError: bad value {n} " + "z" * 80 + "\n")
        _run(large, f"python step{n}.py", f"ValueError: bad value {n} " + "z" * 80 + "\n")
    assert "bad value 39" in small.render() and "bad value 0 " not in small.render()
    assert 1 < len(small.errors) < len(large.errors)
    section = small.render().split("Errors seen (newest outcome per command, most recent "
                                   "last):\n")[1]
    assert len(section) <= small.error_chars  # each entry "- `command`: line" as rendered


def test_ledger_requests_once_and_not_repeated_when_shown() -> None:
    ledger = Ledger()
    ledger.record_user("the task: fix parse()")
    for _ in range(3):
        ledger.record_user("continue")
    ledger.record_user("also add a test")
    assert ledger.render().count("- continue") == 1
    shown = ledger.render(lambda head: head in "the task: fix parse()\ncontinue")
    assert "the task" not in shown and "continue" not in shown and "also add a test" in shown


def test_shrunk_command_keeps_its_error_lines() -> None:
    body = "\n".join(f"collecting line {i}" for i in range(60))
    text = body[:1000] + "\n" + PYTEST_RUN + body
    record = passes.record(Message(role="tool", content=text),
                           Facts("run_command", kind="command"))
    assert len(record) < len(text) // 2
    assert "E       TypeError: Unexpected keyword arguments passed" in record
    assert "3 failed, 51 passed" in record and "its error lines follow" in record
    assert record.splitlines()[0] == "collecting line 0"  # cut at line ends
    again = Message(role="tool", content=record)
    assert passes.record(again, Facts("run_command", kind="command")) == record  # once only


def _session() -> History:
    """A request, then six read turns of which the third wrote a file instead."""
    history = History().add(Message(role="user", content="task"), None, COUNTER.message)
    for n in range(6):
        name = "write_file" if n == 2 else "read_file"
        call = ToolCall(id=f"c{n}", name=name, arguments={"file_path": f"f{n}.py"})
        meta = ({"kind": "generic", "changed": [[f"f{n}.py", "modified"]]} if n == 2 else
                {"kind": "file", "path": f"f{n}.py", "lines": 30})
        result = ToolResult(code_text(30, n), meta=meta)
        history = history.add(Message(role="assistant", tool_calls=(call,)), None,
                              COUNTER.message)
        history = history.add(Message(role="tool", content=result.content, tool_call_id=call.id,
                                      name=name), Facts.of(call, result, n != 2),
                              COUNTER.message)
    return history


def test_history_groups_calls_with_their_results_and_counts_them() -> None:
    history = _session()
    assert len(history.turns) == 7 and [len(t.messages) for t in history.turns[:2]] == [1, 2]
    assert history.tokens == sum(COUNTER.message(m) for m in history.messages())


def test_shrink_keeps_last_two_turns_whole_and_untouched_turns_identical() -> None:
    history = _session()
    out = passes.shrink(history, 2, COUNTER.message)
    assert out.turns[-2:] == history.turns[-2:] and out.turns[0] is history.turns[0]
    assert out.turns[1].messages[1].content == "[read_file: f0.py, 30 lines — content compacted]"
    assert out.tokens < history.tokens
    late = passes.shrink(history, 2, COUNTER.message, start=4)
    assert late.turns[:4] == history.turns[:4] and late.turns[4] is not history.turns[4]


def test_shrink_with_nothing_kept_shrinks_every_turn() -> None:
    history = _session()
    assert passes.shrink(history, 7, COUNTER.message).turns == history.turns
    shrunk = passes.shrink(history, 0, COUNTER.message)
    assert all(len(m.content) < 500 for m in shrunk.messages() if m.role == "tool")


def test_drop_keeps_users_and_changes_and_frees_what_it_is_asked_for() -> None:
    history = _session()
    kept, dropped = passes.drop(history, 2)
    assert kept.turns[0] is history.turns[0] and not any(m.role == "user" for m in dropped)
    assert any(m.name == "write_file" for m in kept.messages())  # a changed file scores high
    assert len(dropped) == 4  # 2 of the 4 candidate turns, each call + result
    more, gone = passes.drop(history, 2, free=sum(COUNTER.message(m) for m in dropped) + 1)
    assert len(gone) > len(dropped) and any(m.name == "write_file" for m in more.messages())


def test_nuclear_keeps_last_two_turns() -> None:
    history = _session()
    kept, dropped = passes.nuclear(history, 2)
    assert kept.turns == history.turns[-2:] and dropped == history.messages()[:-4]


def test_transcript_replay_and_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    transcript = Transcript(path)
    transcript.message(Message(role="user", content="a"))
    transcript.history([Message(role="user", content="b")], "recap")
    transcript.message(Message(role="assistant", content="c"))
    transcript.close()
    with path.open("a") as f:
        f.write('{"type": "mess')  # a crash while writing
    state = replay(path)
    assert [m.content for m in state.history] == ["b", "c"] and state.recap == "recap"
    assert len(new_session_id()) == len("20261123-121500-ab12")
