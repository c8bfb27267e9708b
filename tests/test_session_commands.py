"""Session control in the REPL (pipe input, the real session around a scripted model):
/undo after edits, writes and new files, after a compaction, repeated, and refused when a
file changed on disk; --edits ask with its diff and answers; Tab completion of @paths and
of /model names."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from swival.config import Settings
from swival.repl import SlashAndPathCompleter
from swival.session import Session, build_session
from tests.scripted import ScriptedProvider, call, reply
from tests.test_repl_logic import CTRL_D, Run, user_texts


def flat(text: str) -> str:
    """Screen text with line wrapping undone."""
    return " ".join(text.split())


def make(root: Path, provider: ScriptedProvider, **kw: object) -> Session:
    settings = Settings(project_root=root, commands="all", max_output_tokens=1024,
                        max_turns=8, **kw)  # type: ignore[arg-type]
    return build_session(settings, provider, interactive=True)


def edits_of_one_request(root: Path) -> list[object]:
    (root / "app.py").write_text("x = 1\n")
    (root / "notes.md").write_text("old notes\n")
    return [
        call("read_file", file_path="app.py"),
        call("edit_file", file_path="app.py", old_string="x = 1", new_string="x = 2"),
        call("read_file", file_path="notes.md"),
        call("write_file", file_path="notes.md", content="new notes\n"),
        call("write_file", file_path="pkg/new.py", content="print()\n"),
        reply("Done."),
    ]


def test_undo_reverts_the_request_and_tells_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider([*edits_of_one_request(tmp_path), reply("Understood.")])
    run = Run(make(tmp_path, provider))
    out = flat(run(f"change things\r/undo\rwhat now?\r/undo\r{CTRL_D}"))
    assert (tmp_path / "app.py").read_text() == "x = 1\n"
    assert (tmp_path / "notes.md").read_text() == "old notes\n"
    assert not (tmp_path / "pkg").exists()
    assert 'Undid the file edits of "change things": restored app.py, notes.md; removed ' \
           "pkg/new.py (created by it)." in out
    assert "files changed by commands are not tracked" in out
    assert "Nothing to undo" in out  # the second /undo: nothing older
    told = user_texts(provider.requests[-1])[-1]
    assert told.startswith("what now?") and "[The user ran /undo" in told
    assert "restored app.py, notes.md; removed pkg/new.py" in told
    assert "x = 1" not in told.split("[The user ran /undo")[1]  # no file content


def test_undo_after_a_compaction_and_repeated_back_through_the_session(
        tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {n} of a long file\n"
                                              for n in range(300)))
    script = [*edits_of_one_request(tmp_path),
              call("read_file", file_path="app.py"),
              call("write_file", file_path="app.py", content="x = 3\n"),
              reply("Second done."),
              call("read_file", file_path="big.txt"), reply("Read it."),
              call("read_file", file_path="big.txt", offset=2), reply("Read it again."),
              call("list_files"), reply("Listed.")]
    provider = ScriptedProvider(script)
    run = Run(make(tmp_path, provider))
    out = flat(run(f"first\rsecond\rthird\rfourth\rfifth\r/compact\r/undo\r/undo\r{CTRL_D}"))
    assert "Compacted. Level 1" in out
    assert out.index("Compacted. Level 1") < out.index('Undid the file edits of "second"')
    assert 'Undid the file edits of "first"' in out
    assert "1 earlier request can still be undone." in out
    assert (tmp_path / "app.py").read_text() == "x = 1\n"
    assert not (tmp_path / "pkg").exists()


def test_undo_refuses_when_a_file_changed_on_disk_and_force_overrides(tmp_path: Path) -> None:
    provider = ScriptedProvider(edits_of_one_request(tmp_path))
    session = make(tmp_path, provider)
    run = Run(session)
    run(f"change things\r{CTRL_D}")
    (tmp_path / "notes.md").write_text("my own edit\n")
    out = flat(run(f"/undo\r{CTRL_D}"))
    assert "Nothing was undone: notes.md changed on disk since the agent wrote it" in out
    assert "/undo --force" in out
    assert (tmp_path / "app.py").read_text() == "x = 2\n"  # untouched
    out = flat(run(f"/undo --force\r{CTRL_D}"))
    assert "Your later changes to notes.md were discarded (--force)." in out
    assert (tmp_path / "notes.md").read_text() == "old notes\n"


def test_edits_ask_shows_the_diff_and_takes_the_answer(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a = 1\n")
    provider = ScriptedProvider([
        call("read_file", file_path="a.py"),
        call("edit_file", file_path="a.py", old_string="a = 1", new_string="a = 2"),
        call("write_file", file_path="b.py", content="b = 1\n"),
        call("write_file", file_path="c.py", content="c = 1\n"),
        call("write_file", file_path="b.py", content="b = 2\n"),
        call("write_file", file_path="d.py", content="d = 1\n"),
        reply("Done."),
    ])
    run = Run(make(tmp_path, provider, edits="ask"))
    # a.py: once; b.py: always for b.py; c.py: no; b.py again: not asked; d.py: every file
    out = flat(run(f"edit\ry\ra\rn\rs\r{CTRL_D}"))
    assert "Change a.py?" in out and "-a = 1" in out and "+a = 2" in out
    assert out.count("Create b.py?") == 1 and "Create d.py?" in out
    assert (tmp_path / "a.py").read_text() == "a = 2\n"
    assert (tmp_path / "b.py").read_text() == "b = 2\n"
    assert not (tmp_path / "c.py").exists() and (tmp_path / "d.py").exists()
    refused = [m.content for m in provider.requests[4].messages if m.role == "tool"][-1]
    assert "declined" in refused and "c.py" in refused
    assert out.count("+a = 2") == 1  # the diff shown with the question is not repeated


def test_tab_completes_mentions_and_model_names(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "module.py").write_text("x = 1\n")
    completer = SlashAndPathCompleter(tmp_path, lambda: ["qwen-7b", "qwen-14b", "llama"])

    def complete(text: str) -> list[str]:
        doc = Document(text, len(text))
        return [c.text for c in completer.get_completions(doc, CompleteEvent())]

    assert complete("explain @src/mo") == ["dule.py"]
    assert "src" in [c.rstrip("/") for c in complete("explain @")]
    assert complete("/model qw") == ["qwen-7b", "qwen-14b"]
    assert complete("/undo --f") == ["--force"]
