"""@path mentions: files and directories named in a request are attached as delimited
blocks under read_file's caps and rules (secrets show as markers), each cut to the
window like a tool result; a file counts as read only when the model got all of it;
paths outside the workspace are refused; words that are not paths stay as written. In
process through the real session, and one-shot through the installed `swival`."""

from __future__ import annotations

import re
from pathlib import Path

from swival.config import Settings
from swival.context.tokens import TokenCounter
from swival.errors import ContextOverflowError
from swival.events import Notice
from swival.redaction import Redactor
from swival.session import build_session
from swival.tools.base import ToolContext
from swival.tools.mentions import attach
from tests.e2e import run_swival
from tests.fakeserver import FakeServer, Reply, text, tool
from tests.scripted import ScriptedProvider, call, reply

KEY = "sk-or-v1-mention0123456789abcdef"


def project(root: Path) -> ToolContext:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "util.py").write_text("X = 2\n")
    (root / ".env").write_text(f"OPENROUTER_API_KEY={KEY}\n")
    return ToolContext(root=root, redactor=Redactor.of({"OPENROUTER_API_KEY": KEY}))


def test_a_file_is_attached_and_counts_as_read_once_sent_whole(tmp_path: Path) -> None:
    ctx = project(tmp_path)
    out = attach("fix the bug in @src/app.py please", ctx)
    assert out.note.startswith("[The user attached these with @. A file shown whole")
    [item] = out.attached
    assert (item.shown, item.kind) == ("src/app.py", "file")
    assert item.opening == "--- @src/app.py (file content, numbered as read_file shows it) ---"
    assert item.body == "1\tdef main():\n2\t    return 1"
    assert item.closing == "--- end of @src/app.py ---"
    app = (tmp_path / "src" / "app.py").resolve()
    assert app not in ctx.read_files  # not before the engine has sent it
    assert item.sent(ctx, None) == "2 lines" and app in ctx.read_files


def test_a_file_sent_in_part_does_not_count_as_read(tmp_path: Path) -> None:
    ctx = project(tmp_path)
    [item] = attach("@src/app.py", ctx).attached
    assert item.sent(ctx, 1) == "1 of 2 lines"
    assert (tmp_path / "src" / "app.py").resolve() not in ctx.read_files


def test_directories_are_listed_and_punctuation_is_not_part_of_the_path(
        tmp_path: Path) -> None:
    ctx = project(tmp_path)
    out = attach("look at @src, and (@src/util.py).", ctx)
    kinds = {a.shown: a.kind for a in out.attached}
    assert kinds == {"src": "directory", "src/util.py": "file"}
    assert out.attached[0].body == "src/app.py\nsrc/util.py"
    assert out.attached[1].body == "1\tX = 2"
    assert out.problems == ()


def test_a_path_with_spaces_is_attached_quoted_or_escaped(tmp_path: Path) -> None:
    ctx = project(tmp_path)
    (tmp_path / "my notes").mkdir()
    (tmp_path / "my notes" / "to do.txt").write_text("buy milk\n")
    for text_ in ('see @"my notes/to do.txt"', "see (@'my notes/to do.txt').",
                  "see @my\\ notes/to\\ do.txt, then"):
        out = attach(text_, ctx)
        assert [a.shown for a in out.attached] == ["my notes/to do.txt"], text_
        assert out.attached[0].body == "1\tbuy milk" and out.problems == ()
    assert [a.kind for a in attach("@my\\ notes", ctx).attached] == ["directory"]
    missing = attach('@"my notes/gone.txt"', ctx)
    assert missing.attached == () and missing.problems == (
        "@my notes/gone.txt was not attached: there is no such file or directory in the "
        "project.",)


def test_a_listing_alone_is_not_said_to_count_as_read_and_one_entry_is_singular(
        tmp_path: Path) -> None:
    ctx = project(tmp_path)
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "only.py").write_text("")
    out = attach("what is in @one", ctx)
    assert out.note == "[The user attached these with @.]"
    assert out.attached[0].sent(ctx, None) == "1 entry"
    assert attach("and @src", ctx).attached[0].sent(ctx, None) == "2 entries"


def test_secrets_in_an_attached_file_are_markers(tmp_path: Path) -> None:
    ctx = project(tmp_path)
    out = attach("what is in @.env", ctx)
    assert KEY not in out.attached[0].body
    assert "[redacted:OPENROUTER_API_KEY]" in out.attached[0].body


def test_outside_the_workspace_is_refused_and_other_words_stay_plain(tmp_path: Path) -> None:
    inner = tmp_path / "proj"
    inner.mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    ctx = project(inner)
    text = "mail me@example.com about @decorator and @../secret.txt and @src/gone.py"
    out = attach(text, ctx)
    assert out.note == "" and out.attached == ()
    assert len(out.problems) == 2
    assert "@../secret.txt was not attached" in out.problems[0]
    assert "outside the workspace" in out.problems[0]
    assert "@src/gone.py was not attached: there is no such file" in out.problems[1]
    absolute = str((tmp_path / "secret.txt").resolve())
    [said] = attach(f"see @{absolute}", ctx).problems
    assert said == f"@{absolute} was not attached: {absolute} is outside the workspace."


def test_the_same_path_twice_is_attached_once_and_binary_files_are_refused(
        tmp_path: Path) -> None:
    ctx = project(tmp_path)
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    out = attach("@src/app.py vs @./src/app.py and @blob.bin", ctx)
    assert [a.shown for a in out.attached] == ["src/app.py"]
    assert len(out.problems) == 1 and "binary" in out.problems[0]
    # The person reads why, not the advice meant for the model.
    assert out.problems[0] == ("@blob.bin was not attached: blob.bin is a binary file (or not "
                               "UTF-8 text) and cannot be shown.")


def test_through_the_session_the_model_gets_the_block_and_may_edit_at_once(
        tmp_path: Path) -> None:
    project(tmp_path)
    provider = ScriptedProvider([
        call("edit_file", file_path="src/app.py", old_string="return 1",
             new_string="return 2"),
        reply("Done."),
    ])
    session = build_session(Settings(project_root=tmp_path, max_output_tokens=1024),
                            provider, interactive=False)
    events = list(session.agent.run_turn("make @src/app.py return 2; ignore @nope/x.py"))
    notes = [(e.text, e.level) for e in events if isinstance(e, Notice)]
    assert ("Attached @src/app.py (2 lines).", "info") in notes
    assert any("@nope/x.py was not attached" in t and lvl == "warning" for t, lvl in notes)
    first = provider.requests[0].messages[-1]
    assert first.role == "user" and "2\t    return 1" in first.content
    assert first.content.startswith("make @src/app.py return 2; ignore @nope/x.py\n\n")
    result = provider.requests[1].messages[-1]
    assert result.role == "tool" and not result.content.startswith("error"), result.content
    assert (tmp_path / "src" / "app.py").read_text() == "def main():\n    return 2\n"


def test_one_shot_tasks_attach_mentions_too(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("the launch code is 1234\n")
    with FakeServer(kind="llamacpp") as server:
        server.script(Reply(text="It says 1234."))
        done = run_swival(server, tmp_path, "-p", "what does @notes.md say?")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It says 1234."
    user = server.requests[0]["messages"][-1]["content"]
    assert "1\tthe launch code is 1234" in user and "Attached @notes.md" in done.stderr


def test_the_ledger_keeps_the_request_without_its_attachments(tmp_path: Path) -> None:
    project(tmp_path)
    provider = ScriptedProvider([reply("Looked at it.")])
    session = build_session(Settings(project_root=tmp_path, max_output_tokens=1024),
                            provider, interactive=False)
    list(session.agent.run_turn("THE TASK: explain @src/app.py"))
    engine = session.agent.context
    events = engine.on_overflow(ContextOverflowError("too long"), 1)  # drops the request
    assert [e.reason for e in events][-1] == "emergency"
    pinned = engine.messages()[1].content
    assert "THE TASK: explain @src/app.py" in pinned
    assert "return 1" not in pinned and "--- @src/app.py" not in pinned


def test_large_attachments_are_cut_like_reads_and_only_whole_files_count_as_read(
        tmp_path: Path) -> None:
    """At 8K two 400-line files cannot both arrive whole: each is cut like a read_file
    result (its head, and the line to continue from), the small one arrives whole, and
    the whole request stays within half the input budget. The screen says how many
    lines each sent. A write to a file the model got part of needs a read first; an
    edit of the file it got whole does not."""
    def body(tag: str) -> str:
        return "".join(f"{tag} line {i}: words to make the line a little longer\n"
                       for i in range(1, 401))

    (tmp_path / "a.txt").write_text(body("alpha"))
    (tmp_path / "b.txt").write_text(body("beta"))
    (tmp_path / "c.txt").write_text("gamma one\ngamma two\n")
    with FakeServer(kind="llamacpp", window=8192) as server:
        server.script(tool("write_file", file_path="a.txt", content="replaced\n"),
                      tool("edit_file", file_path="c.txt", old_string="gamma two",
                           new_string="gamma 2"),
                      text("Compared."))
        done = run_swival(server, tmp_path, "-p", "compare @a.txt @b.txt and @c.txt")
    assert done.returncode == 0, done.stderr
    said = re.findall(r"Attached @(\w\.txt) \((\d+) (?:of|lines)", done.stderr)
    sent = {name: int(n) for name, n in said}
    assert "Attached @c.txt (2 lines)." in done.stderr  # whole: no "2 of 2 lines"
    assert set(sent) == {"a.txt", "b.txt", "c.txt"} and sent["c.txt"] == 2
    assert 0 < sent["a.txt"] < 400 and 0 < sent["b.txt"] < 400, done.stderr
    request = server.requests[0]["messages"][-1]["content"]
    assert request.count("[output cut to fit the context window") == 2
    assert f"alpha line {sent['a.txt']}:" in request
    assert f"alpha line {sent['a.txt'] + 1}:" not in request
    assert f"offset={sent['a.txt'] + 1}" in request  # where read_file goes on
    assert "2\tgamma two\n--- end of @c.txt ---" in request
    assert TokenCounter().text(request) <= 0.5 * (8192 - 1228)
    results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "you have not read it" in results[-1]  # a.txt: only part of it was sent
    assert (tmp_path / "a.txt").read_text() == body("alpha")
    assert (tmp_path / "c.txt").read_text() == "gamma one\ngamma 2\n"  # c.txt: sent whole
