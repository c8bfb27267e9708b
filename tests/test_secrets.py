"""Secrets: the Redactor itself, reads that hide them, and write-backs that keep them.

The file tools run for real on files in a temporary project; what is checked is what
the model is shown and what ends up on disk."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from swival.config import Settings, named_secrets
from swival.messages import ToolCall, ToolResult
from swival.redaction import BLOCK, Redactor
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.read_file import KEEP_LINE_BYTES
from swival.tools.registry import ToolRegistry

KEY = "sk-or-v1-0123456789abcdef0123456789abcdef"
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz012345"
KEY_MARK = "[redacted:OPENROUTER_API_KEY]"
TOKEN_MARK = "[redacted:GITHUB_TOKEN]"
REDACTOR = Redactor.of({"OPENROUTER_API_KEY": KEY, "GITHUB_TOKEN": TOKEN})


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return ToolRegistry(core_tools()).run(ToolCall("c1", name, args), ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path, redactor=REDACTOR)


def read_then(ctx: ToolContext, rel: str, text: str) -> Path:
    """A file holding `text`, read by the model (so it may be written)."""
    path = ctx.root / rel
    path.write_text(text)
    shown = call(ctx, "read_file", file_path=rel)
    assert not shown.is_error and KEY not in shown.content and TOKEN not in shown.content
    return path


# --- the redactor ---------------------------------------------------------------------

def test_each_secret_gets_its_own_marker_naming_the_variable() -> None:
    text = f"key={KEY} token={TOKEN} again {KEY}"
    found: set[str] = set()
    assert REDACTOR.redact(text, found) == f"key={KEY_MARK} token={TOKEN_MARK} again {KEY_MARK}"
    assert found == {"OPENROUTER_API_KEY", "GITHUB_TOKEN"}
    assert REDACTOR.restore(REDACTOR.redact(text), found) == text


def test_short_values_shared_values_and_multiline_values() -> None:
    redactor = Redactor.of({"A_TOKEN": "short", "OPENAI_API_KEY": KEY, "ZED_API_KEY": KEY,
                            "PEM_SECRET": "-----BEGIN KEY-----\nMIIEvQIBADANBgkq\nabc\n"})
    assert redactor.names == ("OPENAI_API_KEY", "PEM_SECRET.1", "PEM_SECRET.2")
    assert redactor.redact("short stays") == "short stays"
    assert redactor.redact(KEY) == "[redacted:OPENAI_API_KEY]"  # first name in order
    assert redactor.redact("x\nMIIEvQIBADANBgkq\n") == "x\n[redacted:PEM_SECRET.2]\n"


def test_longer_secret_containing_a_shorter_one_is_replaced_whole() -> None:
    redactor = Redactor.of({"SHORT_TOKEN": "abcdefgh1234", "LONG_TOKEN": "abcdefgh1234-more"})
    assert redactor.redact("abcdefgh1234-more abcdefgh1234") == (
        "[redacted:LONG_TOKEN] [redacted:SHORT_TOKEN]")


def test_scrub_reaches_every_string_in_a_record() -> None:
    record = {"a": [KEY, {"b": f"x{TOKEN}"}], "n": 3, "t": (KEY,)}
    assert REDACTOR.scrub(record) == {"a": [KEY_MARK, {"b": f"x{TOKEN_MARK}"}], "n": 3,
                                      "t": (KEY_MARK,)}


def test_stream_copy_finds_a_secret_split_across_two_reads() -> None:
    for offset in (len(KEY) - 1, len(KEY) // 2, 1, 0):
        data = b"a" * (BLOCK - offset) + KEY.encode() + b"b" * 10
        out = io.BytesIO()
        REDACTOR.copy(io.BytesIO(data), out)
        assert out.getvalue() == b"a" * (BLOCK - offset) + KEY_MARK.encode() + b"b" * 10


def test_a_cut_through_a_secret_does_not_show_its_start() -> None:
    cut = "[redacted:OPENROUTER_API_KEY/cut]"
    assert REDACTOR.redact(f"x={KEY[:20]}") == f"x={cut}"
    assert REDACTOR.redact(f"near {KEY[:30]}... (HTTP 400)") == f"near {cut}... (HTTP 400)"
    assert REDACTOR.redact(f"near {KEY[:30]}… [line cut]") == f"near {cut}… [line cut]"
    assert REDACTOR.redact(f"{KEY[:20]} goes on") == f"{KEY[:20]} goes on"  # not a cut
    assert REDACTOR.redact("keys look like sk-or-v1-") == "keys look like sk-or-v1-"
    found: set[str] = set()
    REDACTOR.redact(f"x={KEY[:20]}", found)
    assert found == set(), "a cut secret is never restored"


def test_named_secrets_name_the_configured_key() -> None:
    env = {"OPENROUTER_API_KEY": KEY, "HOME": "/home/me"}
    assert named_secrets(Settings(api_key=KEY), env) == {"OPENROUTER_API_KEY": KEY}
    assert named_secrets(Settings(api_key=TOKEN), env) == {"OPENROUTER_API_KEY": KEY,
                                                           "api_key": TOKEN}


def test_more_secrets_can_be_added_later() -> None:
    wider = REDACTOR.with_secrets({"mcp.github.Authorization": "Bearer abcdef123456"})
    assert wider.redact("Bearer abcdef123456") == "[redacted:mcp.github.Authorization]"
    assert wider.redact(KEY) == KEY_MARK


# --- reading ------------------------------------------------------------------------

def test_read_shows_markers_and_tells_the_model_how_to_keep_them(ctx: ToolContext) -> None:
    (ctx.root / ".env").write_text(f"OPENROUTER_API_KEY={KEY}\nGH={TOKEN}\nplain=1\n")
    result = call(ctx, "read_file", file_path=".env")
    assert result.content.startswith(f"1\tOPENROUTER_API_KEY={KEY_MARK}\n2\tGH={TOKEN_MARK}")
    assert "Keep such a marker unchanged" in result.content
    assert "Keep such" not in call(ctx, "read_file", file_path=".env", offset=3).content


def test_a_line_cut_never_shows_part_of_a_secret(tmp_path: Path) -> None:
    long_key = "k" * 30 + "".join(chr(65 + i % 26) for i in range(170))
    ctx = ToolContext(root=tmp_path, redactor=Redactor.of({"LONG_API_KEY": long_key}))
    inside = 150  # characters of the secret left before the read cuts the line
    count = 39
    pad = KEEP_LINE_BYTES - count * len(long_key) - inside
    (tmp_path / "one-line.txt").write_text("a" * pad + long_key * count + long_key + "tail")
    shown = call(ctx, "read_file", file_path="one-line.txt").content
    assert long_key[:inside] not in shown and long_key[:20] not in shown
    assert shown.split("\n")[0].count("[redacted:LONG_API_KEY]") == count
    assert "[redacted:LONG_API_KEY/cut]" in shown


# --- writing back -------------------------------------------------------------------

def test_write_back_restores_the_secret_where_the_marker_stands(ctx: ToolContext) -> None:
    path = read_then(ctx, ".env", f"OPENROUTER_API_KEY={KEY}\nregion=eu\n")
    result = call(ctx, "write_file", file_path=".env",
                  content=f"OPENROUTER_API_KEY={KEY_MARK}\nregion=us\n")
    assert not result.is_error, result.content
    assert path.read_text() == f"OPENROUTER_API_KEY={KEY}\nregion=us\n"
    assert f"Secret values written back: {KEY_MARK}" in result.content
    assert KEY not in result.meta["diff"] and "+region=us" in result.meta["diff"]


def test_edit_with_the_marker_in_old_and_new_string(ctx: ToolContext) -> None:
    path = read_then(ctx, ".env", f"# keys\nOPENROUTER_API_KEY={KEY}\nGH={TOKEN}\n")
    result = call(ctx, "edit_file", file_path=".env", old_string=f"OPENROUTER_API_KEY={KEY_MARK}",
                  new_string=f"export OPENROUTER_API_KEY={KEY_MARK}")
    assert not result.is_error, result.content
    assert path.read_text() == f"# keys\nexport OPENROUTER_API_KEY={KEY}\nGH={TOKEN}\n"
    assert KEY not in result.meta["diff"] and TOKEN not in result.meta["diff"]


def test_an_edit_cannot_reach_inside_a_secret(ctx: ToolContext) -> None:
    path = read_then(ctx, "conf.py", f"PREFIX = 'sk-or-v1-'\nKEY = '{KEY}'\n")
    result = call(ctx, "edit_file", file_path="conf.py", old_string="sk-or-v1-",
                  new_string="pk-", replace_all=True)
    assert not result.is_error, result.content
    assert path.read_text() == f"PREFIX = 'pk-'\nKEY = '{KEY}'\n"


def test_crlf_file_with_a_secret_keeps_both(ctx: ToolContext) -> None:
    path = ctx.root / "win.env"
    path.write_bytes(f"A=1\r\nOPENROUTER_API_KEY={KEY}\r\n".encode())
    call(ctx, "read_file", file_path="win.env")
    result = call(ctx, "edit_file", file_path="win.env", old_string="A=1", new_string="A=2")
    assert not result.is_error, result.content
    assert path.read_bytes() == f"A=2\r\nOPENROUTER_API_KEY={KEY}\r\n".encode()


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
def test_a_file_holding_a_secret_and_its_marker_text_is_refused(ctx: ToolContext,
                                                                 tool: str) -> None:
    text = f"OPENROUTER_API_KEY={KEY}\n# redacted form: {KEY_MARK}\nx=1\n"
    path = read_then(ctx, "notes.txt", text)
    args = ({"content": f"OPENROUTER_API_KEY={KEY_MARK}\nx=2\n"} if tool == "write_file"
            else {"old_string": "x=1", "new_string": "x=2"})
    result = call(ctx, tool, file_path="notes.txt", **args)
    assert result.is_error and "cannot be told apart" in result.content
    assert "left unchanged" in result.content
    assert path.read_text() == text


@pytest.mark.parametrize("stray", [TOKEN_MARK, "[redacted:OPENROUTER_API_KE", "[redacted]"])
def test_a_marker_that_stands_for_nothing_the_file_held_is_refused(ctx: ToolContext,
                                                                   stray: str) -> None:
    text = f"OPENROUTER_API_KEY={KEY}\n"
    path = read_then(ctx, ".env", text)
    result = call(ctx, "write_file", file_path=".env",
                  content=f"OPENROUTER_API_KEY={KEY_MARK}\nGH={stray}\n")
    assert result.is_error and "stands for no secret this file held" in result.content
    assert path.read_text() == text


def test_a_new_file_never_receives_a_secret(ctx: ToolContext) -> None:
    result = call(ctx, "write_file", file_path="leak.txt", content=f"copy: {KEY_MARK}\n")
    assert not result.is_error
    assert (ctx.root / "leak.txt").read_text() == f"copy: {KEY_MARK}\n"
    assert "written as plain text" in result.content


def test_dropping_a_marker_is_allowed_and_said(ctx: ToolContext) -> None:
    path = read_then(ctx, ".env", f"OPENROUTER_API_KEY={KEY}\nregion=eu\n")
    result = call(ctx, "write_file", file_path=".env", content="region=eu\n")
    assert not result.is_error
    assert path.read_text() == "region=eu\n"
    assert f".env no longer holds {KEY_MARK}" in result.content


def test_command_output_is_redacted_before_it_is_cut_and_saved(ctx: ToolContext) -> None:
    # The key sits where the head preview would be cut without redaction first.
    result = call(ctx, "run_command",
                  command=f"head -c 1980 /dev/zero | tr '\\0' a; echo {KEY}; seq 1 4000")
    spilled = (ctx.root / result.meta["spill_path"]).read_text()
    assert KEY not in result.content and KEY[:16] not in result.content
    assert KEY not in spilled and KEY_MARK in spilled
