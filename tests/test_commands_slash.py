"""Slash commands as plain functions, against the real agent, context engine, knowledge and
tools (the model is the scripted provider)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from swival.commands import COMMANDS, dispatch, is_command, suggest
from swival.effects import TodoEffect
from swival.session import Session
from tests.scripted import ScriptedProvider, call, reply
from tests.test_repl_logic import make_session


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for i in range(4):
        (tmp_path / f"f{i}.py").write_text("".join(f"value_{i}_{n} = {n}\n" for n in range(150)))
    return tmp_path


def run(session: Session, text: str) -> None:
    for _ in session.agent.run_turn(text):
        pass


def reading_session(root: Path, provider: ScriptedProvider) -> Session:
    """A session whose history holds four file reads over two requests."""
    provider.add(call("read_file", file_path="f0.py"), call("read_file", file_path="f1.py"),
                 reply("read two"), call("read_file", file_path="f2.py"),
                 call("read_file", file_path="f3.py"), reply("read two more"))
    session = make_session(root, provider)
    run(session, "read the first two")
    run(session, "read the others")
    return session


def test_compact_shrinks_old_tool_results_and_reports_tokens_saved(root: Path) -> None:
    session = reading_session(root, ScriptedProvider(window=32_768))
    before = session.agent.context.usage().tool_results
    result = dispatch("/compact", session.agent)
    assert result.level == "info" and result.events and result.events[0].level == 1
    event = result.events[0]
    assert event.tokens_after < event.tokens_before
    assert f"saved {event.tokens_before - event.tokens_after}" in result.text
    assert session.agent.context.usage().tool_results < before
    assert "cached tokens again" in result.text or event.reprocessed == 0


def test_compact_with_nothing_to_do_says_so(root: Path) -> None:
    session = make_session(root, ScriptedProvider())
    result = dispatch("/compact", session.agent)
    assert result.events == () and "Nothing to compact" in result.text


def test_compact_drop_runs_level_two_with_a_model_recap(root: Path) -> None:
    provider = ScriptedProvider(window=32_768)
    session = reading_session(root, provider)
    provider.add(*[reply("Recap: read f0-f3, found constants.")] * 4)
    asked = len(provider.requests)
    result = dispatch("/compact --drop", session.agent)
    assert [e.level for e in result.events] == [2], result.text
    assert len(provider.requests) == asked + 1  # the recap came from the model
    pinned = "\n".join(m.content for m in session.agent.context.messages())
    assert "Recap: read f0-f3, found constants." in pinned
    assert result.text.startswith("Compacted. Level 2:")


def test_ctrl_c_during_the_recap_says_what_level_one_already_did(root: Path) -> None:
    def interrupt(_request: object) -> object:
        raise KeyboardInterrupt  # what a real provider lets through on Ctrl-C

    provider = ScriptedProvider(window=32_768)
    session = reading_session(root, provider)
    before = session.agent.context.estimate()
    provider.add(interrupt)
    result = dispatch("/compact --drop", session.agent)
    after = session.agent.context.estimate()
    assert after < before  # level 1 ran before the recap was asked for, and stays
    assert result.level == "warning"
    assert result.text == (f"Interrupted while the model wrote the recap (level 2), which was "
                           f"not applied. Level 1 had already shrunk old tool results, and "
                           f"that stays: {before} → {after} tokens.")


@pytest.mark.parametrize("line", ["/compact keep the --verbose flag work",
                                  "/compact --drop keep the --verbose flag work"])
def test_a_focus_may_hold_words_starting_with_dashes(root: Path, line: str) -> None:
    provider = ScriptedProvider(window=32_768)
    session = reading_session(root, provider)
    provider.add(*[reply("Recap: --verbose is parsed in f1.")] * 4)
    result = dispatch(line, session.agent)
    assert [e.level for e in result.events] == [2], result.text
    assert result.text.endswith("The recap's focus: keep the --verbose flag work")
    assert "keep the --verbose flag work" in provider.requests[-1].messages[0].content


def test_bad_arguments_give_the_usage(root: Path) -> None:
    session = make_session(root, ScriptedProvider())
    result = dispatch("/compact --hard", session.agent)
    assert result.level == "error" and "Usage: /compact [--drop]" in result.text


def test_save_then_restore_collapses_the_scope_into_the_models_summary(root: Path) -> None:
    provider = ScriptedProvider(window=32_768)
    session = make_session(root, provider)
    assert "probe" in dispatch("/save probe", session.agent).text
    provider.add(call("read_file", file_path="f0.py"), call("read_file", file_path="f1.py"),
                 reply("looked"))
    run(session, "look around")
    provider.add(reply("SUMMARY: f0 and f1 define value constants."))
    before = len(session.agent.context.history)
    result = dispatch("/restore", session.agent)
    assert result.events and result.events[0].level == 0, result.text
    assert result.events[0].tokens_after < result.events[0].tokens_before
    assert len(session.agent.context.history) < before
    provider.add(reply("ok"))
    run(session, "next")
    sent = "\n".join(m.content for m in provider.requests[-1].messages)
    assert "SUMMARY: f0 and f1 define value constants." in sent


def test_restore_after_a_write_needs_force(root: Path) -> None:
    provider = ScriptedProvider(window=32_768)
    session = make_session(root, provider)
    dispatch("/save", session.agent)
    provider.add(call("write_file", file_path="new.txt", content="x\n"), reply("wrote"))
    run(session, "write something")
    refused = dispatch("/restore", session.agent)
    assert refused.events == () and "--force" in refused.text
    provider.add(reply("SUMMARY: wrote new.txt."))
    forced = dispatch("/restore --force", session.agent)
    assert forced.events, forced.text


def test_unsave_cancels_the_checkpoint(root: Path) -> None:
    session = make_session(root, ScriptedProvider())
    dispatch("/save here", session.agent)
    text = dispatch("/unsave", session.agent).text
    assert text == "Checkpoint 'here' cancelled; nothing was collapsed."
    assert not session.agent.context.status().checkpoint
    assert dispatch("/unsave", session.agent).text == "There is no checkpoint to cancel."


def test_clear_resets_history_todos_and_file_tracking(root: Path) -> None:
    provider = ScriptedProvider([call("read_file", file_path="f0.py"), reply("read")])
    session = make_session(root, provider)
    run(session, "read f0")
    session.agent.context.knowledge.apply(TodoEffect("add", "write tests"), 1)
    assert session.agent.tool_ctx.read_files and session.agent.context.history
    result = dispatch("/clear", session.agent)
    assert "Cleared" in result.text
    assert session.agent.context.history == ()
    assert session.agent.tool_ctx.read_files == {}
    assert "empty" in dispatch("/todo", session.agent).text


def test_todo_lists_items_with_their_state(root: Path) -> None:
    session = make_session(root, ScriptedProvider())
    knowledge = session.agent.context.knowledge
    knowledge.apply(TodoEffect("add", "read the code"), 1)
    knowledge.apply(TodoEffect("add", "fix the bug"), 1)
    knowledge.apply(TodoEffect("done", id=1), 2)
    result = dispatch("/todo", session.agent)
    assert result.text == "Todos (1 open):"
    assert ("1", "done", "read the code") in result.rows
    assert ("2", "open", "fix the bug") in result.rows


def test_context_shows_every_category_against_the_window_and_thresholds(root: Path) -> None:
    session = reading_session(root, ScriptedProvider(window=16_384))
    result = dispatch("/context", session.agent)
    labels = [row[0] for row in result.rows]
    for label in ("system prompt", "tool schemas", "kept notes", "user messages",
                  "assistant messages", "tool results", "= in use", "free"):
        assert label in labels
    usage = session.agent.context.usage()
    tool_row = next(row for row in result.rows if row[0] == "tool results")
    assert tool_row[1] == str(usage.tool_results)
    assert tool_row[2] == f"{100 * usage.tool_results / 16_384:.1f}%"
    assert f"reaches {usage.trigger} tokens" in result.footer
    assert result.footer.endswith("Compactions so far: 0. Cached tokens the server computed "
                                  "again because of compactions and changes to the tool list "
                                  "(/mcp, /plan): 0.")  # reads right with none of them
    assert "level 2" in result.footer and "level 3" in result.footer


def test_sessions_lists_the_sessions_swival_recorded(root: Path) -> None:
    provider = ScriptedProvider([reply("one")])
    session = make_session(root, provider)
    run(session, "my very first request")
    shipped = root / ".swival" / "sessions" / "20990101-000000-ffff.jsonl"
    shipped.write_text('{"type": "message", "message": {"role": "user", "content": "x"}}\n')
    result = dispatch("/sessions", session.agent)
    assert len(result.rows) == 1, "a transcript that came with the repository is not listed"
    first = result.rows[0]
    assert first[:2] == (session.agent.context.session_id, "now (this one)")
    assert first[2] == "2" and first[3] == "my very first request"
    assert "1 other session file in" in result.footer
    assert "it is not listed and cannot be resumed" in result.footer


@pytest.mark.parametrize(("request_text", "shown"), [
    ("fix @f0.py", "fix @f0.py"),  # the file block the model got is not part of it
    ("look at @f0.py and tell me whether the values in it are what the generator promised",
     "look at @f0.py and tell me whether the values in it are…"),
])
def test_sessions_shows_the_request_as_typed_cut_between_words(
        root: Path, request_text: str, shown: str) -> None:
    session = make_session(root, ScriptedProvider([reply("one")]))
    run(session, request_text)
    assert dispatch("/sessions", session.agent).rows[0][3] == shown


def test_help_lists_every_command_and_exit_exits(root: Path) -> None:
    session = make_session(root, ScriptedProvider())
    help_ = dispatch("/help", session.agent)
    assert [row[0].split()[0] for row in help_.rows] == [f"/{c.name}" for c in COMMANDS]
    assert dispatch("/exit", session.agent).exit
    assert dispatch("/quit", session.agent).exit


def test_what_a_person_reads_uses_no_internal_words(root: Path) -> None:
    """/help, /context and /clear speak of kept notes, not the ledger or pinned block."""
    agent = make_session(root, ScriptedProvider()).agent
    for line in ("/help", "/context", "/clear"):
        result = dispatch(line, agent)
        shown = result.text + " ".join(" ".join(row) for row in result.rows)
        found = re.findall(r"ledger|harness|pinned|spill|calibrat|turn index", shown, re.I)
        assert not found, (line, found)


def test_the_keys_in_help_fit_a_60_column_terminal(root: Path) -> None:
    footer = dispatch("/help", make_session(root, ScriptedProvider()).agent).footer
    assert "Ctrl-C" in footer and max(len(line) for line in footer.splitlines()) <= 58


def test_unknown_commands_get_a_suggestion(root: Path) -> None:
    session = make_session(root, ScriptedProvider())
    result = dispatch("/restor", session.agent)
    assert result.level == "error"
    assert result.text == "Unknown command /restor. Did you mean /restore? Type /help for the list."
    assert suggest("xyzzy") is None
    assert suggest("ses") == "sessions"
    assert suggest("foo") is None  # not "todo": only close spellings are suggested
    assert (suggest("hlep"), suggest("comapct"), suggest("qiut")) == ("help", "compact", "quit")
    assert dispatch("/foo", session.agent).text == "Unknown command /foo. Type /help for the list."


def test_help_names_the_other_spellings_of_a_command(root: Path) -> None:
    rows = dict(dispatch("/help", make_session(root, ScriptedProvider()).agent).rows)
    assert "/exit (or /quit, /q)" in rows and "/help [command] (or /?)" in rows


@pytest.mark.parametrize("name", [c.name for c in COMMANDS if not (c.flags or c.free)])
def test_a_command_that_takes_no_arguments_refuses_one_and_does_nothing(
        root: Path, name: str) -> None:
    session = make_session(root, ScriptedProvider([reply("one")]))
    run(session, "hello")
    read_only = session.agent.tools.read_only
    result = dispatch(f"/{name} extra words", session.agent)
    assert result.level == "error" and not result.exit and not result.rows
    assert result.text == (f"/{name} takes no arguments, so it did nothing (given: extra "
                           f"words). Type /{name} alone.")
    assert session.agent.context.history and session.agent.tools.read_only == read_only


@pytest.mark.parametrize(("line", "said"), [
    ("/undo now", "/undo does not take 'now', so it did nothing. Usage: /undo [--force]"),
    ("/restore --hard", "/restore does not take '--hard', so it did nothing. Usage: "
                        "/restore [--force]"),
    ("/compact --fast", "/compact does not take '--fast', so it did nothing. Usage: "
                        "/compact [--drop] [focus] (words starting with -- may follow the "
                        "first word of the focus)."),
    ("/mcp stop", "/mcp does not take 'stop', so it did nothing. Usage: /mcp [restart "
                  "[NAME...] | refresh]"),
    ("/mcp refresh all", "/mcp does not take 'all', so it did nothing. Usage: /mcp [restart "
                         "[NAME...] | refresh]"),
    ("/model a b", "/model does not take 'a b', so it did nothing. Usage: /model [name] (one "
                   "name: a model's name has no spaces)."),
    ("/help me out", "/help does not take 'me out', so it did nothing. Usage: "
                     "/help [command]"),
])
def test_a_wrong_argument_is_named_with_the_usage(root: Path, line: str, said: str) -> None:
    result = dispatch(line, make_session(root, ScriptedProvider()).agent)
    assert (result.level, result.text) == ("error", said)


def test_help_with_a_name_says_what_that_command_does(root: Path) -> None:
    agent = make_session(root, ScriptedProvider()).agent
    assert dispatch("/help undo", agent).text.startswith("/undo [--force]: Revert the file")
    assert dispatch("/help /quit", agent).text.startswith("/exit (or /quit, /q): Leave")
    wrong = dispatch("/help contxt", agent)
    assert (wrong.level, wrong.text) == ("error", "There is no command /contxt. Did you mean "
                                                  "/context? /help lists them all.")


def test_a_second_save_says_it_replaces_the_first(root: Path) -> None:
    session = make_session(root, ScriptedProvider())
    first = dispatch("/save before", session.agent).text
    second = dispatch("/save after", session.agent).text
    assert "replaces" not in first
    assert second.startswith("Checkpoint 'after' saved. It replaces the checkpoint 'before'.")


@pytest.mark.parametrize(("line", "expected"), [
    ("/help", True), ("  /compact --drop", True), ("/etc/hosts looks wrong", False),
    ("fix /src", False), ("", False), ("/", True),
])
def test_is_command_tells_commands_from_paths(line: str, expected: bool) -> None:
    assert is_command(line) is expected
