"""Tool lines tell the truth: what the model got after a cut, which lines a paged read
returned, what a search looked for, how a command ended (its last output lines, a cross
when it failed), refusals in a person's words, and time spent at an approval prompt left
out. Also: plurals, the pipe printer's whole lines, and the live region's spinner,
progress and resize handling."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.text import Text

from swival.events import (
    Compacted,
    ModelCallStarted,
    Notice,
    SubagentStep,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from swival.messages import Message, ToolCall, ToolResult, Usage
from swival.providers.repair import repair_note
from swival.render import ProgressPrinter, Status, TurnView, make_console, outcome, tool_line
from swival.render.lines import command_tail
from swival.render.live import LiveRegion, rewrapped_rows
from swival.render.replay import replay_lines
from swival.render.view import COMMAND_SPINNER_AFTER
from swival.words import clip, plural

CUT = {"kept_chars": 3000, "total_chars": 9000, "kept_lines": 90, "total_lines": 290}
SPILL = ".swival/out/s1/read-1.txt"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def console(width: int = 100) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return make_console(buf, width=width, color=False), buf


def view(width: int = 100) -> tuple[TurnView, io.StringIO, FakeClock]:
    con, buf = console(width)
    clock = FakeClock()
    return TurnView(con, Status("m", 8192, "test", 8192), clock=clock), buf, clock


def line_of(call: ToolCall, result: ToolResult, seconds: float = 0.0, width: int = 120) -> str:
    con, buf = console(width)
    con.print(tool_line(call, result, seconds, width))
    return buf.getvalue().rstrip("\n")


READ = ToolCall("c1", "read_file", {"file_path": "commands.py"})


def test_a_read_the_engine_cut_says_what_the_model_got_and_where_the_rest_is() -> None:
    meta = {"kind": "file", "path": "commands.py", "lines": 286, "shown": 286, "offset": 1,
            "context_cut": CUT, "spill_path": SPILL}
    text = line_of(READ, ToolResult("...", meta=meta))
    assert text == f"• read_file commands.py — 90 of 286 lines, cut to fit; full text in {SPILL}"
    assert "286 of 286" not in text


@pytest.mark.parametrize(("width", "shown"), [
    (96, f" — 90 of 286 lines, cut to fit; full text in {SPILL}"),
    (84, " — 90 of 286 lines, cut to fit; full text in …/read-1.txt"),
    (62, " — 90 of 286 lines, cut… …/read-1.txt"),
    (38, " — 90 of 286…"),  # no room for the name: words only
])
def test_a_narrow_line_keeps_the_saved_files_name(width: int, shown: str) -> None:
    """The folders of the saved file go first, then words before it; no word is cut."""
    meta = {"kind": "file", "path": "commands.py", "lines": 286, "shown": 286, "offset": 1,
            "context_cut": CUT, "spill_path": SPILL}
    assert line_of(READ, ToolResult("...", meta=meta), width=width) == (
        "• read_file commands.py" + shown)


@pytest.mark.parametrize(("call", "shown"), [
    (ToolCall("c1", "mcp_call", {"server": "github", "tool": "search_issues",
                                 "arguments": {"query": "crash", "limit": 5}}),
     "• mcp_call github search_issues crash — 3 lines"),
    (ToolCall("c1", "mcp_list", {"server": "github"}), "• mcp_list github — 3 lines"),
    (ToolCall("c1", "mcp__docs__lookup", {"limit": 3, "topic": "asyncio"}),
     "• mcp__docs__lookup asyncio — 3 lines"),
    (ToolCall("c1", "mcp__docs__ping", {}), "• mcp__docs__ping — 3 lines"),
])
def test_mcp_lines_name_what_they_call(call: ToolCall, shown: str) -> None:
    result = ToolResult("a\nb\nc", meta={"kind": "mcp", "summary": "3 lines"})
    assert line_of(call, result) == shown
    con, out = console(120)
    ProgressPrinter(con).handle(ToolFinished(call, result, 0.0))
    assert out.getvalue().rstrip("\n") == shown  # one space between the parts on stderr too


def test_a_cut_command_result_says_how_much_reached_the_model() -> None:
    call = ToolCall("c1", "run_command", {"command": "pytest"})
    meta = {"kind": "command", "exit_code": 0, "context_cut": CUT, "spill_path": SPILL}
    assert outcome(ToolResult("x\n[exit code 0]", meta=meta)) == (
        f"exit 0, cut to fit (90 of 290 lines reached the model); full text in {SPILL}")
    assert outcome(ToolResult("x", meta={"kind": "command", "exit_code": 0, "spill_path":
                                        ".swival/out/c.txt"})) == (
        "exit 0; full text in .swival/out/c.txt")  # the tool's own head-and-tail spill
    assert outcome(ToolResult("x", meta={"kind": "file", "lines": 400, "shown": 400,
                                        "spill_path": SPILL})) == (
        f"cut to fit from 400 lines; full text in {SPILL}")  # cut, figures unknown
    # A long output: the tool kept its head and tail, counted against the whole output.
    long = {"kind": "command", "exit_code": 0, "spill_path": SPILL, "preview_lines": 600,
            "output_lines": 10_000}
    assert outcome(ToolResult("x", meta=long)) == (
        f"exit 0, 600 of 10000 lines reached the model; full text in {SPILL}")
    assert outcome(ToolResult("x", meta={**long, "context_cut": CUT})) == (
        f"exit 0, cut to fit (90 of 10000 lines reached the model); full text in {SPILL}")
    assert line_of(call, ToolResult("x", meta={"kind": "command", "exit_code": 0})) \
        == "• run_command pytest — exit 0"


def test_paged_reads_show_their_range() -> None:
    page = {"kind": "file", "lines": 286, "shown": 20, "offset": 100}
    assert outcome(ToolResult("...", meta=page)) == "lines 100-119 of 286"
    assert outcome(ToolResult("...", meta={**page, "offset": 1})) == "20 of 286 lines"
    assert outcome(ToolResult("...", meta={"kind": "file", "lines": 1, "shown": 1})) == "1 line"


def test_grep_shows_its_pattern_and_a_path_other_than_the_root() -> None:
    matches = ToolResult("...", meta={"kind": "matches", "matches": 1})
    here = ToolCall("c1", "grep", {"pattern": "def main", "path": "."})
    there = ToolCall("c2", "grep", {"pattern": "def main", "path": "src"})
    assert line_of(here, matches) == '• grep "def main" — 1 match'
    assert line_of(there, matches) == '• grep "def main" in src — 1 match'


def test_a_failed_command_gets_a_cross_and_its_last_output_lines() -> None:
    tv, buf, _ = view()
    call = ToolCall("c1", "run_command", {"command": "pytest -q"})
    content = "collecting\n\ntest_a.py F\nFAILED test_a.py::test_one\n1 failed\n[exit code 1]\n"
    tv.handle(ToolStarted(call))
    tv.handle(ToolFinished(call, ToolResult(content, meta={"kind": "command",
                                                           "exit_code": 1}), 0.0))
    tv.close()
    lines = buf.getvalue().splitlines()
    assert lines[0].rstrip() == "✗ run_command pytest -q — exit 1"
    assert [line.strip() for line in lines[1:4]] == [
        "test_a.py F", "FAILED test_a.py::test_one", "1 failed"]
    assert "[exit code 1]" not in buf.getvalue() and "collecting" not in buf.getvalue()


def test_refusals_are_worded_for_the_person_in_the_repl_and_in_pipes() -> None:
    call = ToolCall("c1", "run_command", {"command": "rm -rf build"})
    refused = ToolResult("command refused: the user declined to run it. Ask them, or "
                         "continue without running it.", is_error=True,
                         meta={"kind": "command", "refused": True,
                               "summary": "not run: you declined"})
    assert line_of(call, refused) == "✗ run_command rm -rf build — not run: you declined"
    con, buf = console()
    con.soft_wrap = True
    ProgressPrinter(con).handle(ToolFinished(call, refused, 0.0))
    ProgressPrinter(con).handle(ToolFinished(call, ToolResult(
        "boom\n[exit code 2]", meta={"kind": "command", "exit_code": 2}), 0.0))
    assert buf.getvalue().splitlines() == ["✗ run_command rm -rf build — not run: you declined",
                                           "✗ run_command rm -rf build — exit 2"]
    assert "Ask them" not in buf.getvalue()


def test_an_error_without_a_summary_shows_its_first_sentence() -> None:
    error = ToolResult("error: cannot read a.py: Permission denied. Use list_files to find "
                       "a readable file.", is_error=True)
    assert outcome(error) == "cannot read a.py: Permission denied"


def test_the_models_note_on_a_repaired_call_stays_off_its_line() -> None:
    """The agent puts repair_note's line first in the result, for the model; the person
    got a notice of the repair already, and the line shows the call's own outcome."""
    call = ToolCall("c1", "read_file", {"file_path": "x.txt"}, repairs=("single quotes",))
    note = repair_note(call)
    assert note is not None
    missing = ToolResult(f"{note}\nerror: x.txt does not exist. Use list_files.", is_error=True)
    assert outcome(missing) == "x.txt does not exist"
    command = ToolCall("c2", "run_command", {"command": "ls"}, repairs=("trailing comma",))
    printed = ToolResult(f"{repair_note(command)}\nREADME.md\n[exit code 0]\n",
                         meta={"kind": "command", "exit_code": 0})
    assert command_tail(printed) == ["README.md"]


def test_time_at_the_approval_prompt_is_not_the_tools_time() -> None:
    tv, buf, clock = view()
    call = ToolCall("c1", "run_command", {"command": "make"})
    tv.handle(ToolStarted(call))
    clock.now += 0.1
    with tv.paused():  # the person reads the question for 9 s
        clock.now += 9.0
    clock.now += 0.4
    tv.handle(ToolFinished(call, ToolResult("ok\n[exit code 0]", meta={
        "kind": "command", "exit_code": 0}), 9.5))
    tv.close()
    assert "• run_command make — exit 0 · 0.5s" in buf.getvalue()


def test_a_subagents_call_leaves_out_its_approval_time_too() -> None:
    tv, buf, clock = view()
    tv.handle(ToolStarted(ToolCall("t1", "task", {"description": "check the logs"})))
    with tv.paused():
        clock.now += 6.0
    child = ToolCall("c1", "run_command", {"command": "make"})
    tv.handle(SubagentStep(1, "check the logs", child, ToolResult("ok\n[exit code 0]", meta={
        "kind": "command", "exit_code": 0}), 6.3))
    tv.close()
    assert "    • run_command make — exit 0 · 0.3s" in buf.getvalue()


def test_a_subagent_is_announced_its_call_shown_live_and_its_approvals_named() -> None:
    tv, buf, clock = view()
    task = ToolCall("t1", "task", {"description": "check the logs"})
    tv.handle(ToolStarted(task))
    assert tv.asking == ""
    tv.handle(SubagentStep(1, "check the logs", prompt="Read app.log and report the error."))
    assert "  ↳ subagent 1: check the logs — asked: Read app.log and report the error." in \
        buf.getvalue()
    child = ToolCall("c1", "read_file", {"file_path": "app.log"})
    tv.handle(SubagentStep(1, "check the logs", child))
    live = [line.plain for line in tv._body(100)]  # the spinners: the task, under it the call
    assert any("task check the logs" in line for line in live)
    assert any(line.startswith("    ") and "read_file app.log · 0s" in line for line in live)
    assert tv.asking == "subagent 1"  # an approval asked now is the subagent's
    clock.now += 1.5
    tv.handle(SubagentStep(1, "check the logs", child, ToolResult("interrupted", True, {
        "summary": "interrupted after 1.5s"}), 1.5))
    tv.interrupted()
    out = buf.getvalue()
    assert "    ✗ read_file app.log — interrupted after 1.5s" in out
    assert out.index("    ✗ read_file") < out.index("✗ task check the logs — interrupted")
    assert out.count("↳ subagent 1") == 1 and tv.asking == ""


def test_one_shot_progress_names_the_subagent_that_asks() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(make_console(out, width=100, color=False))
    printer.handle(ToolStarted(ToolCall("t1", "task", {"description": "x"})))
    assert printer.asking == ""
    printer.handle(SubagentStep(2, "x", prompt="Look."))
    printer.handle(SubagentStep(2, "x", ToolCall("c1", "grep", {"pattern": "a"})))
    assert printer.asking == "subagent 2" and out.getvalue().count("\n") == 1
    printer.handle(ToolFinished(ToolCall("t1", "task", {"description": "x"}),
                                ToolResult("done"), 1.0))
    assert printer.asking == ""


def test_an_interrupted_call_keeps_its_line() -> None:
    tv, buf, clock = view()
    tv.handle(ToolStarted(ToolCall("c1", "run_command", {"command": "sleep 100"})))
    clock.now += 3.2
    tv.interrupted()
    out = buf.getvalue()
    assert "✗ run_command sleep 100 — interrupted after 3.2s" in out
    assert out.index("interrupted after") < out.index("Interrupted. The conversation is kept")


def test_one_shot_keeps_the_line_of_the_call_ctrl_c_stopped() -> None:
    con, buf = console()
    con.soft_wrap = True  # a pipe: whole lines
    now = [100.0]
    printer = ProgressPrinter(con, clock=lambda: now[0])
    done = ToolCall("c1", "run_command", {"command": "ls"})
    printer.handle(ToolStarted(done))
    printer.handle(ToolFinished(done, ToolResult("a\n[exit code 0]",
                                                 meta={"kind": "command", "exit_code": 0}), 0.0))
    printer.interrupted()  # between calls: nothing was running
    running = ToolCall("c2", "run_command", {"command": "sleep 30"})
    printer.handle(ToolStarted(running))
    with printer.paused():  # approved after 5 s: not the call's time
        now[0] += 5.0
    now[0] += 2.5
    printer.interrupted()
    asked = ToolCall("c3", "run_command", {"command": "make"})
    printer.handle(ToolStarted(asked))
    with pytest.raises(KeyboardInterrupt), printer.paused():
        raise KeyboardInterrupt
    printer.interrupted()
    assert buf.getvalue().splitlines() == [
        "• run_command ls — exit 0", "✗ run_command sleep 30 — interrupted after 2.5s",
        "✗ run_command make — cancelled at the approval question"]


def test_a_call_stopped_at_its_question_says_so() -> None:
    tv, buf, clock = view()
    tv.handle(ToolStarted(ToolCall("c1", "run_command", {"command": "make"})))
    with pytest.raises(KeyboardInterrupt), tv.paused():
        clock.now += 4.0
        raise KeyboardInterrupt
    tv.interrupted()
    assert "✗ run_command make — cancelled at the approval question" in buf.getvalue()


def test_a_snapshot_restore_is_one_line() -> None:
    tv, buf, _ = view()
    call = ToolCall("c1", "snapshot", {"action": "restore", "summary": "findings " * 5})
    tv.handle(ToolStarted(call))
    tv.handle(Compacted(0, "snapshot restore", 1400, 900, 3))
    tv.handle(ToolFinished(call, ToolResult("Collapsed 6 messages into your summary.", meta={
        "kind": "summary", "summary": "collapsed 6 messages into the model's summary"}), 0.0))
    tv.close()
    assert buf.getvalue().splitlines() == [
        "• snapshot restore — collapsed 6 messages into the model's summary: 1400 → 900 tokens"]


def test_a_compaction_line_does_not_repeat_its_reason() -> None:
    tv, buf, _ = view()
    tv.handle(Compacted(0, "snapshot restore", 1400, 1444, 3, reprocessed=50))
    tv.handle(Compacted(2, "over the trigger", 9000, 4000, 3))
    tv.handle(Compacted(4, "emergency", 9000, 1200, 3))
    tv.close()
    assert buf.getvalue().splitlines() == [
        "⟳ snapshot restore: 1400 → 1444 tokens (50 cached tokens to recompute)",
        "⟳ compaction level 2: 9000 → 4000 tokens (over the trigger)",
        "⟳ emergency compaction: 9000 → 1200 tokens"]


def test_counts_agree_with_their_nouns() -> None:
    assert (plural(1, "match", "matches"), plural(2, "match", "matches")) == ("1 match",
                                                                             "2 matches")
    assert outcome(ToolResult("", meta={"count": 1})) == "1 entry"
    tv, buf, _ = view()
    tv.start_turn()
    tv.handle(TurnFinished("Done.", "done", 1, 1, Usage(10, 2)))
    assert "1 model call · 1 tool call · 10 in / 2 out" in buf.getvalue()


def test_text_for_people_is_cut_between_words() -> None:
    assert clip("find the  line\nthat names the owner", 20) == "find the line that…"
    assert clip("short", 20) == "short"
    assert clip("unbreakablewordthatgoeson", 10) == "unbreakab…"  # one word: cut
    assert clip("one, two three", 9) == "one, two…"
    assert clip("one, two three", 6) == "one…"  # no dangling comma


def test_pipes_get_whole_lines_however_long() -> None:
    con, buf = console(width=40)
    con.soft_wrap = True  # what stderr_console sets when stderr is not a terminal
    printer = ProgressPrinter(con)
    long_error = ("error: " + "x" * 150 + " is not a file in the workspace. Use list_files.")
    call = ToolCall("c1", "read_file", {"file_path": "src/" + "deep/" * 20 + "a.py"})
    printer.handle(ToolFinished(call, ToolResult(long_error, is_error=True), 0.0))
    printer.handle(Compacted(2, "over the trigger at 85 % of the input budget", 12000, 5000, 3,
                             reprocessed=3000))
    printer.handle(Notice("The request was cut to 157 of 900 lines for the model; the whole "
                          "text is in .swival/out/s1/request-1.txt.", "warning"))
    lines = buf.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].endswith("x" * 150 + " is not a file in the workspace")
    assert "deep/" * 20 in lines[0]
    assert lines[1].endswith("(over the trigger at 85 % of the input budget; 3000 cached "
                             "tokens to recompute)")
    assert lines[2].endswith("request-1.txt.")


def test_the_spinner_turns_while_the_model_thinks() -> None:
    tv, _, clock = view()
    tv.handle(ModelCallStarted(100, 8192))
    glyphs = set()
    for _ in range(4):
        con, buf = console()
        con.print(tv.live_body())
        glyphs.add(buf.getvalue().split()[0])
        clock.now += 0.125
    tv.close()
    assert len(glyphs) == 4


def test_between_a_tool_and_the_next_call_the_wait_is_shown() -> None:
    tv, _, clock = view()
    call = ToolCall("c1", "read_file", {"file_path": "a.py"})
    tv.handle(ToolStarted(call))
    tv.handle(ToolFinished(call, ToolResult("x", meta={"kind": "file", "lines": 1,
                                                       "shown": 1}), 0.0))
    clock.now += 2.1  # a recap is being written before the next request
    con, buf = console()
    con.print(tv.live_body())
    tv.close()
    assert "preparing the next request · 2.1s" in buf.getvalue()


def test_a_slow_command_shows_a_spinner_a_quick_one_nothing() -> None:
    tv, _, clock = view()
    with tv.working("/restore"):
        clock.now += COMMAND_SPINNER_AFTER - 0.2
        quick = console()
        quick[0].print(tv.live_body())
        clock.now += 1.0
        slow = console()
        slow[0].print(tv.live_body())
    assert "/restore" not in quick[1].getvalue()
    assert "/restore · 1.1s" in slow[1].getvalue()


def test_after_the_terminal_narrows_the_redraw_climbs_every_rewrapped_row() -> None:
    assert rewrapped_rows([80, 20, 0], 40) == 2 + 1 + 1
    buf = io.StringIO()
    con = Console(file=buf, width=80, force_terminal=True, color_system=None)
    region = LiveRegion(con, lambda width: [Text("s" * 70), Text("x" * 30)])
    region.start()
    con.print("above")  # the region is drawn under it: two rows at 80 columns
    mark = len(buf.getvalue())
    con.width = 40  # a re-wrapping terminal now shows the 70 cells on two rows: three
    region.follow_width()
    con.print("below")
    region.stop()
    climb_two_rows = "\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K"
    assert climb_two_rows in buf.getvalue()[mark:]


def test_a_resumed_conversation_is_replayed_compactly() -> None:
    messages = [
        Message("user", "remember the word pineapple"),
        Message("assistant", "", (ToolCall("c1", "read_file", {"file_path": "notes.txt"}),)),
        Message("tool", "1\talpha", tool_call_id="c1"),
        Message("assistant", "First answer.\nIt has\nmany\nlines\nto cut."),
        Message("user", "[Your reply was cut off by the output limit.]"),
        Message("user", "and again?\nsecond line"),
        Message("assistant", "Second answer."),
    ]
    con, buf = console()
    for line in replay_lines(messages):
        con.print(line)
    assert [line.rstrip() for line in buf.getvalue().splitlines()] == [
        "› remember the word pineapple", "  • read_file notes.txt", "  First answer.",
        "  It has", "  many", "  lines", "  …", "› and again? …", "  Second answer."]


def test_a_replay_fits_the_terminal_and_cuts_between_words() -> None:
    request = ("please investigate the behaviour of the parser when it is handed extremely "
               "long inputs containing unusual characters")
    answer = "This long answer explains many different considerations about the code in detail."
    messages = [Message("user", request), Message("assistant", answer)]
    con, buf = console(width=60)
    for line in replay_lines(messages, width=60):
        con.print(line)
    shown = [line.rstrip() for line in buf.getvalue().splitlines()]
    assert shown == ["› please investigate the behaviour of the parser when it is…",
                     "  This long answer explains many different considerations…"]
    for line in shown:  # every word shown whole: a word of the text, or one cut before "…"
        assert all(word in request.split() + answer.split() + ["›"]
                   for word in line.rstrip("…").split())


def test_a_notice_reads_whole_in_the_repl() -> None:
    tv, buf, _ = view(width=60)
    path = ".swival/out/20260101-s1/request-1.txt"
    tv.handle(Notice(f"Your request was cut to 157 of 900 lines for the model; the whole text "
                     f"is in {path}.", "warning"))
    lines = buf.getvalue().splitlines()
    assert all(len(line) <= 60 for line in lines)
    assert any(line.strip().endswith(path + ".") for line in lines)  # never split mid-path
