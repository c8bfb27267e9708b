"""Rendering: the status figures, the REPL's turn view, tool lines, diffs, NO_COLOR, width."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from swival.events import (
    Compacted,
    ModelCallFinished,
    ModelCallStarted,
    Notice,
    ReplyRestarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from swival.messages import ToolCall, ToolResult, Usage
from swival.render import (
    ProgressPrinter,
    Status,
    TurnView,
    diff_text,
    key_argument,
    make_console,
    tool_line,
)
from swival.words import percent

DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old = 1\n+new = 2\n keep\n"


def console(width: int = 80, color: bool = False) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    if color:
        return Console(file=buf, width=width, force_terminal=True, color_system="standard",
                       highlight=False), buf
    return make_console(buf, width=width, color=False), buf


def status(**kw: object) -> Status:
    base: dict[str, object] = dict(model="qwen-7b", window=10_000, window_source="/props",
                                   budget=10_000)
    base.update(kw)
    return Status(**base)  # type: ignore[arg-type]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("used", "shown", "level"), [
    (6940, 69, "ok"), (6960, 70, "warn"), (8940, 89, "warn"), (8960, 90, "crit")])
def test_context_share_turns_yellow_at_70_and_red_at_90(used: int, shown: int,
                                                        level: str) -> None:
    """The share as shown: a rounded 70 % is yellow, a rounded 90 % red."""
    s = status(context_tokens=used)
    assert s.level == level
    ctx = [piece for piece in s.parts() if piece[1].startswith("ctx")]
    assert ctx == [(level, f"ctx {shown}% ({used}/10.0k)")]


def test_status_follows_the_events_of_a_turn() -> None:
    s = status()
    s.update(ModelCallStarted(prompt_tokens=4000, window=10_000))
    assert s.context_tokens == 4000
    s.update(ModelCallFinished(Usage(4100, 200), context_tokens=4000))
    assert s.context_tokens == 4300
    s.update(Compacted(1, "trigger", 8000, 3000, 2))
    assert (s.context_tokens, s.compactions) == (3000, 1)
    s.update(TurnFinished("ok", "done", 2, 1, Usage(12_345, 678)))
    text = " · ".join(t for _, t in s.parts())
    assert "last turn 12.3k in/678 out" in text
    assert "1 compaction" in text and "1 compactions" not in text


def test_unknown_window_is_shown_as_unknown_with_the_assumed_budget() -> None:
    s = status(window=None, window_source="server did not say", budget=8192)
    text = " · ".join(t for _, t in s.parts())
    assert "window unknown (~8192) [server did not say]" in text


def test_the_context_reads_counting_until_the_first_count_not_zero() -> None:
    s = status()
    assert [text for _, text in s.parts()][2] == "ctx counting…"
    s.context_tokens = 0
    assert [text for _, text in s.parts()][2] == "ctx 0% (0/10.0k)"


def test_the_context_share_is_rounded_like_every_other_figure() -> None:
    """8970 of 10000 is "90%" in the toolbar as in /context ("89.7%" there, one decimal)
    and the session's warning, and it is coloured as the 90 % it shows."""
    s = status(context_tokens=8970, budget=10_000)
    assert (s.level, s.parts()[2][1]) == ("crit", "ctx 90% (8970/10.0k)")
    assert (percent(8970, 10_000), percent(8970, 10_000, 1)) == ("90%", "89.7%")
    assert status(context_tokens=6940, budget=10_000).level == "ok"  # "69%"


def test_narrow_status_drops_details_but_keeps_the_context_share() -> None:
    s = status(context_tokens=9500, last_turn=Usage(100, 10))
    wide = [t for _, t in s.parts(200)]
    narrow = [t for _, t in s.parts(40)]
    assert len(narrow) < len(wide)
    assert any(t.startswith("ctx 95%") for t in narrow)
    assert sum(len(t) + 3 for t in narrow) <= 60


def test_turn_view_prints_the_final_answer_once_as_markdown() -> None:
    con, buf = console()
    view = TurnView(con, status(), clock=FakeClock())
    view.start_turn()
    for event in (ModelCallStarted(100, 10_000), TextDelta("# Title\n"),
                  TextDelta("Some **bold** text"), ModelCallFinished(Usage(100, 9), 100),
                  TurnFinished("# Title\nSome **bold** text", "done", 1, 0, Usage(100, 9))):
        view.handle(event)
    out = buf.getvalue()
    assert out.count("Title") == 1
    assert "**" not in out  # rendered, not raw markdown
    assert "Some bold text" in out
    assert "1 model call · 0 tool calls · 100 in / 9 out" in out


def test_narration_before_a_tool_call_is_kept_and_each_call_gets_one_line() -> None:
    con, buf = console()
    view = TurnView(con, status(), clock=FakeClock())
    read = ToolCall("c1", "read_file", {"file_path": "src/app.py"})
    for event in (ModelCallStarted(100, 10_000), TextDelta("Let me look."),
                  ModelCallFinished(None, 100), ToolStarted(read),
                  ToolFinished(read, ToolResult("...", meta={"kind": "file", "shown": 40,
                                                              "lines": 40}), 0.01)):
        view.handle(event)
    view.close()
    lines = [line.rstrip() for line in buf.getvalue().splitlines()]
    assert "Let me look." in lines
    assert "• read_file src/app.py — 40 lines" in lines


def test_errors_are_marked_and_red() -> None:
    con, buf = console(color=True)
    call = ToolCall("c1", "edit_file", {"file_path": "a.py"})
    con.print(tool_line(call, ToolResult("old_string not found in a.py", is_error=True), 0, 80))
    out = buf.getvalue()
    assert "✗ edit_file" in out
    assert "\x1b[31m" in out  # red


def test_edit_diffs_are_coloured_by_line_kind() -> None:
    con, buf = console(color=True)
    con.print(diff_text(DIFF))
    out = buf.getvalue()
    added = next(line for line in out.splitlines() if "+new = 2" in line)
    removed = next(line for line in out.splitlines() if "-old = 1" in line)
    assert "\x1b[32m" in added and "\x1b[31m" in removed


def test_long_diffs_are_cut_with_a_count() -> None:
    diff = "".join(f"+line {i}\n" for i in range(100))
    con, buf = console()
    con.print(diff_text(diff, limit=10))
    assert "… 90 more diff lines" in buf.getvalue()
    assert "line 10" not in buf.getvalue()


def test_tool_finished_with_a_diff_prints_it() -> None:
    con, buf = console()
    view = TurnView(con, status())
    call = ToolCall("c1", "edit_file", {"file_path": "x.py"})
    result = ToolResult("ok", meta={"changed": [["x.py", "modified"]], "diff": DIFF})
    view.handle(ToolFinished(call, result, 0.0))
    assert "+new = 2" in buf.getvalue()
    assert "modified x.py" in buf.getvalue()


def test_no_color_env_gives_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    buf = io.StringIO()
    con = Console(file=buf, width=80, force_terminal=True, highlight=False)
    view = TurnView(con, status())
    view.handle(Compacted(2, "over trigger", 9000, 4000, 3))
    view.handle(Notice("server said no", "error"))
    con.print(diff_text(DIFF))
    out = buf.getvalue()
    assert "compaction level 2: 9000 → 4000 tokens (over trigger)" in out
    assert "\x1b[3" not in out  # no foreground colours at all


def test_narrow_terminal_lines_never_wrap() -> None:
    con, buf = console(width=40)
    call = ToolCall("c1", "run_command", {"command": "pytest -x tests/test_something_long.py -k "
                                                     "very_long_selector_name"})
    con.print(tool_line(call, ToolResult("...", meta={"exit_code": 0}), 2.5, 40))
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 40
    assert lines[0].startswith("• run_command pytest")


def test_spinner_shows_elapsed_time_until_the_first_token() -> None:
    clock = FakeClock()
    con, buf = console()
    view = TurnView(con, status(), clock=clock)
    view.handle(ModelCallStarted(100, 10_000))
    clock.now += 2.5
    con.print(view.live_body())
    assert "thinking · 2.5s" in buf.getvalue()
    view.handle(TextDelta("first words"))
    buf.truncate(0)
    con.print(view.live_body())
    assert "thinking" not in buf.getvalue() and "first words" in buf.getvalue()
    view.close()


def test_spinner_shows_preparation_then_thinking() -> None:
    clock = FakeClock()
    con, buf = console()
    view = TurnView(con, status(), clock=clock)
    view.preparing()
    clock.now += 0.4
    con.print(view.live_body())
    assert "preparing · 0.4s" in buf.getvalue()
    view.handle(ModelCallStarted(100, 10_000))
    clock.now += 1.0
    buf.truncate(0)
    con.print(view.live_body())
    assert "thinking · 1.0s" in buf.getvalue() and "preparing" not in buf.getvalue()
    view.close()


def test_a_cut_reply_is_kept_struck_through_and_marked_superseded() -> None:
    con, buf = console(color=True)
    view = TurnView(con, status(), clock=FakeClock())
    view.start_turn()
    for event in (ModelCallStarted(100, 10_000), TextDelta("The first half of"),
                  ReplyRestarted("The reply was cut (the connection dropped); asking again "
                                 "in 0.5 s."),
                  TextDelta("The whole answer."), ModelCallFinished(Usage(100, 4), 100),
                  TurnFinished("The whole answer.", "done", 1, 0, Usage(100, 4))):
        view.handle(event)
    out = buf.getvalue()
    assert "\x1b[2;9mThe first half of" in out  # dim and struck through
    assert "The reply was cut (the connection dropped)" in out and "superseded" in out
    assert out.index("The first half of") < out.index("superseded") < out.rindex("The whole")


def test_one_shot_progress_says_a_reply_was_cut() -> None:
    con, buf = console()
    ProgressPrinter(con).handle(ReplyRestarted("The reply was cut (x); asking again in 1 s."))
    ProgressPrinter(con, quiet=True).handle(ReplyRestarted("quiet"))
    assert buf.getvalue() == "The reply was cut (x); asking again in 1 s.\n"


def test_running_tool_shows_its_key_argument_and_elapsed_time() -> None:
    clock = FakeClock()
    con, buf = console()
    view = TurnView(con, status(), clock=clock)
    view.handle(ToolStarted(ToolCall("c1", "run_command", {"command": "sleep 100"})))
    clock.now += 12
    con.print(view.live_body())
    assert "run_command sleep 100 · 12s" in buf.getvalue()
    view.close()


def test_interruption_keeps_what_streamed_and_says_so() -> None:
    con, buf = console()
    view = TurnView(con, status())
    view.handle(TextDelta("partial answ"))
    view.interrupted()
    out = buf.getvalue()
    assert "partial answ" in out and "Interrupted" in out


def test_max_turns_answer_is_shown_in_red() -> None:
    con, buf = console(color=True)
    view = TurnView(con, status())
    view.handle(TurnFinished("Stopped after 3 model calls", "max_turns", 3, 5))
    assert "\x1b[31mStopped after 3 model calls" in buf.getvalue()


def test_key_argument_prefers_paths_and_shortens() -> None:
    assert key_argument(ToolCall("1", "x", {"path": "a" * 100}), limit=20) == "a" * 19 + "…"
    assert key_argument(ToolCall("1", "x", {"other": 1})) == ""


def test_progress_printer_stays_quiet_except_for_errors() -> None:
    con, buf = console()
    printer = ProgressPrinter(con, quiet=True)
    call = ToolCall("1", "read_file", {"file_path": "a"})
    printer.handle(ToolFinished(call, ToolResult("x"), 0))
    printer.handle(Notice("boom", "error"))
    assert buf.getvalue().strip() == "boom"


def test_a_retry_before_any_text_is_said_without_striking_anything() -> None:
    con, buf = console(color=False)
    view = TurnView(con, status(), clock=FakeClock())
    view.start_turn()
    for event in (ModelCallStarted(100, 10_000),
                  ReplyRestarted("No reply yet: server error (HTTP 503), retrying in 1.0 s "
                                 "(attempt 2 of 4)."),
                  TextDelta("The answer."), ModelCallFinished(Usage(100, 4), 100),
                  TurnFinished("The answer.", "done", 1, 0, Usage(100, 4))):
        view.handle(event)
    out = buf.getvalue()
    assert "↻ No reply yet: server error (HTTP 503), retrying in 1.0 s (attempt 2 of 4)." in out
    assert "superseded" not in out



def test_a_table_at_60_columns_keeps_a_session_id_whole() -> None:
    """/sessions on a 60-column terminal: the id, to be copied for --resume, is never
    folded; the other columns wrap instead."""
    con, buf = console(width=60)
    view = TurnView(con, status())
    sid = "20261127-044407-aa08"
    view.table(("id", "last active", "messages", "first request"),
               [(sid, "now (this one)", "14", "make the parser accept empty input"),
                ("20261126-101010-bb01", "2026-11-26 10:10", "3", "fix the tests")])
    lines = buf.getvalue().splitlines()
    assert any(line.startswith(sid + " ") for line in lines), lines
    assert max(len(line) for line in lines) <= 60
