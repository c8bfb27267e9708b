"""The docs stay true: the commands they show work, and the flag and key tables match the
code.

Commands are taken from the fenced blocks of README.md and docs/*.md (indented ones too;
lines that start with a command) and from the "reproduce" commands written inline
(`python benchmarks/...`). Each is run, checked, or skipped for a stated reason:

- a one-shot `swival` command (a task given with -p, as an argument or on stdin) and the
  offline ones (`--init-config`, `doctor`) run as written against a loopback FakeServer of
  the provider they name (SWIVAL_BASE_URL points there), in a scratch project;
- a command that starts the REPL, or names a server or a hosted model we cannot reach,
  has its flags checked by the command's own parser (inline `swival ...` examples too);
- the benchmarks' reproduce commands are slow: they run under the `slow` marker, which the
  default run leaves out (`python -m pytest -m slow tests/test_docs.py` runs them), without
  `--write-docs`, so a test run never rewrites the docs;
- commands that need the network or a real model server are listed in SKIPPED with the
  reason (an entry no documented command uses fails).

The example output of docs/usage.md (a stream-json run, a subagent's lines) is checked
against a run of the same task on a scripted server.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import typer.main

from swival.cli import app
from swival.config import KEYS, KEYS_BY_NAME, coerce
from tests.e2e import run_swival
from tests.fakeserver import FakeServer, text, tool

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_WORDS = ("swival", "echo", "python", "scripts/llamacpp.sh", "pip", "ollama",
                 "llama-server", "export", "OLLAMA_CONTEXT_LENGTH=16384")
SKIPPED = {  # command (or its start) -> why it does not run here
    "pip install": "installs packages from the network",
    "python -m pip install": "installs packages from the network",
    "scripts/llamacpp.sh": "downloads llama.cpp and a model, then builds for ~18 minutes "
                           "(pytest -m llamacpp runs its live tests)",
    "ollama": "needs Ollama", "OLLAMA_CONTEXT_LENGTH": "needs Ollama",
    "llama-server": "needs llama.cpp's server", "export": "sets a hosted provider's key",
}
COMMAND = typer.main.get_command(app)


# A fenced block: its fence on a line of its own, indented or not (a block inside a list
# item), with or without a language; a ``` inside a line of prose is not a fence.
FENCE = re.compile(r"^([ \t]*)```(\w*)[ \t]*\n(.*?)^\1```[ \t]*$", re.M | re.S)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block of a Markdown text, the body dedented."""
    return [(lang, textwrap.dedent(body)) for _, lang, body in FENCE.findall(text)]


def block_commands() -> list[tuple[str, str]]:
    """(doc name, command line) for each command line of the docs' fenced blocks without
    a language (toml and json blocks hold no commands)."""
    found = []
    for doc in DOCS:
        for lang, body in fenced_blocks(doc.read_text(encoding="utf-8")):
            for line in body.splitlines() if not lang else []:
                words = line.split()
                if words and words[0] in COMMAND_WORDS and "·" not in words:
                    found.append((doc.name, re.sub(r"\s+#\s.*$", "", line).strip()))
    return sorted(set(found))


def inline_commands(start: str) -> list[tuple[str, str]]:
    """(doc name, command) for each `start ...` written inline in the docs' prose."""
    found = []
    for doc in DOCS:
        prose = FENCE.sub("", doc.read_text(encoding="utf-8"))
        rest = r"[^`]*" if start.endswith("/") else r"(?: [^`]*)?"
        found += [(doc.name, " ".join(m.split())) for m in re.findall(
            rf"`({re.escape(start)}{rest})`", prose)]
    return sorted(set(found))


def skip_reason(command: str) -> str | None:
    return next((why for start, why in SKIPPED.items() if command.startswith(start)), None)


def swival_args(command: str) -> tuple[list[str], str | None]:
    """The arguments of a `swival` command line, and the text it pipes in (if any)."""
    piped = None
    if "|" in command:
        feed, command = (part.strip() for part in command.split("|", 1))
        piped = shlex.split(feed)[1] + "\n"  # echo "..."
    args = shlex.split(command)
    assert args[0] == "swival", command
    if ">" in args:
        args = args[:args.index(">")]
    return args[1:], piped


def runs_offline(args: list[str], piped: str | None) -> bool:
    """A task (or an offline action) and no server or hosted model we cannot reach."""
    if "--base-url" in args or any("/" in a for a in args if a.startswith(("openrouter",
                                                                            "openai"))):
        return False
    offline = {"--init-config", "doctor", "--doctor", "--version", "--help"}
    return piped is not None or "-p" in args or "--prompt" in args or bool(offline & set(args)) \
        or any(not a.startswith("-") for a in args[:1])


def check_flags(args: list[str]) -> None:
    """The command's own parser accepts these options (unknown ones raise)."""
    ctx = COMMAND.make_context("swival", ["--help"], resilient_parsing=True)
    COMMAND.make_parser(ctx).parse_args(list(args))


SWIVAL_BLOCKS = [c for c in block_commands() if c[1].split()[0] in ("swival", "echo")]
INLINE = inline_commands("swival")


@pytest.mark.parametrize(("doc", "command"), SWIVAL_BLOCKS + INLINE,
                         ids=[c for _, c in SWIVAL_BLOCKS + INLINE])
def test_documented_swival_commands_use_real_flags(doc: str, command: str) -> None:
    check_flags(swival_args(command.replace("...", "x"))[0])


def run_documented(command: str, root: Path, urls: dict[str, str]) -> str | None:
    """Run one documented command in `root` against the fake server of its provider;
    what went wrong, or None."""
    args, piped = swival_args(command)
    kind = args[args.index("--provider") + 1] if "--provider" in args else "lmstudio"
    extra = {"input": piped} if piped is not None else {}
    result = run_swival(None, root, *args, env={"SWIVAL_BASE_URL": urls[kind]}, **extra)
    problem = None
    if result.returncode != 0 or "Traceback" in result.stderr:
        problem = f"exit {result.returncode}: {result.stderr.strip()[-500:]}"
    elif "--json" in args and json.loads(result.stdout)["answer"] != "Done.":
        problem = f"unexpected JSON: {result.stdout}"
    elif "stream-json" in args and json.loads(result.stdout.splitlines()[-1])["type"] != \
            "result":
        problem = f"no result line: {result.stdout}"
    return f"`{command}`: {problem}" if problem else None


def test_documented_one_shot_commands_run(fake_server: Any, tmp_path: Path) -> None:
    """Each distinct runnable command once, a few at a time (each is a whole process)."""
    runnable = sorted({command for _, command in SWIVAL_BLOCKS
                       if runs_offline(*swival_args(command))})
    assert len(runnable) >= 8, runnable
    urls = {kind: fake_server(kind=kind).script(*[text("Done.")] * 20).url
            for kind in ("lmstudio", "ollama", "llamacpp")}
    roots = [tmp_path / str(i) for i in range(len(runnable))]
    for root in roots:
        (root / ".git").mkdir(parents=True)
    with ThreadPoolExecutor(max_workers=3) as pool:
        problems = [p for p in pool.map(run_documented, runnable, roots,
                                        [urls] * len(runnable)) if p]
    assert not problems, "\n".join(problems)


OTHERS = [c for c in block_commands() + inline_commands("python benchmarks/")
          + inline_commands("scripts/llamacpp.sh") if c not in SWIVAL_BLOCKS]


@pytest.mark.parametrize(("doc", "command"), OTHERS, ids=[c for _, c in OTHERS])
def test_other_documented_commands_are_run_or_skipped_for_a_reason(doc: str,
                                                                   command: str) -> None:
    reason = skip_reason(command)
    if reason is None:
        assert command.startswith("python benchmarks/"), (
            f"{doc}: `{command}` is neither run nor skipped: add it to SKIPPED with the "
            "reason, or run it here")
        return
    assert reason


def test_every_skip_reason_is_for_a_documented_command() -> None:
    """A SKIPPED entry no documented command starts with is stale: its reason is about
    nothing the docs show."""
    documented = [command for _, command in OTHERS]
    stale = [start for start in SKIPPED if not any(c.startswith(start) for c in documented)]
    assert not stale, f"SKIPPED entries no doc uses: {stale}"


def test_fences_are_found_indented_and_not_inside_prose() -> None:
    """A fence inside a list item counts; a ```json written inside a sentence is no fence,
    so the prose after it (and its inline commands) is still read."""
    text = ("Models write a fenced ```json block, or `python benchmarks/a.py` runs.\n\n"
            "- item:\n\n  ```\n  swival -p hi\n  ```\n\n```toml\nx = 1\n```\n"
            "and ```json too; `python benchmarks/b.py`.\n")
    assert fenced_blocks(text) == [("", "swival -p hi\n"), ("toml", "x = 1\n")]
    assert re.findall(r"`(python [^`]*)`", FENCE.sub("", text)) == [
        "python benchmarks/a.py", "python benchmarks/b.py"]


BENCHMARKS = sorted({c.replace(" --write-docs", "") for _, c in OTHERS
                     if c.startswith("python benchmarks/") and skip_reason(c) is None})


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("command", BENCHMARKS)
def test_reproduce_commands_run(command: str) -> None:
    args = shlex.split(command)[1:]  # --write-docs left out: a test run rewrites no docs
    result = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, f"{command}\n{result.stderr[-2000:]}"


def usage_block(after: str) -> list[str]:
    """The lines of docs/usage.md's first fenced block after the text `after`."""
    usage = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    return fenced_blocks(usage.split(after, 1)[1])[0][1].splitlines()


def test_the_stream_json_example_is_what_swival_writes(tmp_path: Path) -> None:
    """The example run of docs/usage.md, against a scripted server: each line as shown,
    but for the server's address, the session id and the time."""
    shown = usage_block("A run with a tool call on a small window")
    (tmp_path / ".git").mkdir()
    (tmp_path / "app.py").write_text("".join(f"print('hello {i}')\n" for i in range(300)))
    with FakeServer(kind="llamacpp", window=4096, model="qwen2.5-coder-7b") as server:
        server.script(tool("read_file", file_path="app.py"), text("It prints hello.", chunk=9))
        done = run_swival(server, tmp_path, "--output-format", "stream-json", "-p",
                          "what does app.py print?")
        url = server.url
    assert done.returncode == 0, done.stderr
    first = json.loads(shown[0])
    got = done.stdout.replace(url, first["base_url"])
    got = got.replace(json.loads(got.splitlines()[0])["session_id"], first["session_id"])
    lines = got.splitlines()
    assert len(lines) == len(shown)
    for doc, real in zip(shown, lines, strict=True):
        if doc.endswith(", ...}"):  # shortened: the fields it shows
            assert real.startswith(doc.removesuffix(", ...}")), real
            continue
        want, have = json.loads(doc), json.loads(real)
        if "seconds" in want:
            have["seconds"] = want["seconds"]
        assert have == want


def test_the_subagent_example_is_what_swival_prints(tmp_path: Path) -> None:
    shown = usage_block("**What you see.**")
    (tmp_path / ".git").mkdir()
    (tmp_path / "big.log").write_text(
        "".join(f"line {i} ok\n" for i in range(149)) + "E1234 disk full\n")
    with FakeServer(kind="llamacpp", window=16384) as server:
        server.script(tool("task", description="find the error code",
                           prompt="Find the error code in big.log"),
                      tool("read_file", file_path="big.log"),
                      tool("grep", pattern="E[0-9]+", path="big.log"),
                      text("E1234 (disk full), line 150."),
                      text("The error code is E1234."))
        done = run_swival(server, tmp_path, "-p", "what is the error code in big.log?")
    assert done.returncode == 0, done.stderr
    printed = [line.rstrip() for line in done.stderr.splitlines()]
    assert shown[0] in printed, done.stderr
    start = printed.index(shown[0])
    assert printed[start:start + len(shown)] == shown, done.stderr


def flag_rows() -> list[tuple[list[str], str, str]]:
    """(flags, config key or "—", description) of each row of docs/usage.md's flag table."""
    usage = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    section = usage.split("\n## Flags\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    rows = []
    for line in table[1:]:
        flags, key, what = (cell.strip() for cell in line.strip("|").split(" | ", 2))
        rows.append((re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", flags), key.strip("`"), what))
    return rows


def option_key(param: Any) -> str | None:
    name = {"json_output": "json"}.get(param.name, param.name)
    return name if name in KEYS_BY_NAME else None


def test_flag_table_matches_the_options_and_the_keys() -> None:
    rows = flag_rows()
    documented = {flag for flags, _, _ in rows for flag in flags}
    options = [p for p in COMMAND.params if p.param_type_name == "option"]
    for param in options:
        names = [*param.opts, *param.secondary_opts]
        assert documented & set(names), f"{names[0]} is not in docs/usage.md's flag table"
        shorts = [n for n in param.opts if not n.startswith("--")]
        assert set(shorts) <= documented, f"{shorts} of {names[0]} are not documented"
    real = {n for p in options for n in [*p.opts, *p.secondary_opts]} | {"-h", "--help"}
    assert documented <= real, f"documented flags that do not exist: {documented - real}"
    by_flag = {n: p for p in options for n in [*p.opts, *p.secondary_opts]}
    for flags, key, _ in rows:
        keys = {option_key(by_flag[f]) for f in flags if f in by_flag} - {None}
        assert (key if key != "—" else None) in (keys or {None}), (flags, key)
    assert {key for _, key, _ in rows} >= {k.name for k in KEYS if not k.fields}


def test_defaults_in_the_docs_and_the_help_are_the_keys_defaults() -> None:
    for flags, key, what in flag_rows():
        stated = re.search(r"\(default `([^`]+)`\)", what)
        if stated:
            default = KEYS_BY_NAME[key].default
            value = float(stated[1]) if isinstance(default, float) else stated[1]
            assert value == (str(default) if isinstance(default, int) else default), flags
    for param in COMMAND.params:
        key = option_key(param)
        shown = re.search(r"\[(\d[\d.]*)\]$", getattr(param, "help", None) or "")
        if key and shown:
            assert float(shown[1]) == KEYS_BY_NAME[key].default, param.name
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    keys_table = configuration.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    for key in KEYS:
        row = re.search(rf"^\| `{key.name}` \| ([^|]+) \|", keys_table, re.M)
        assert row, f"{key.name} is not in docs/configuration.md's key table"
        if key.default is not None and not key.fields:
            written = tomli_w.dumps({"x": key.default}).split(" = ", 1)[1].strip()
            assert row[1].strip() == f"`{written}`", key.name


def test_the_annotated_example_sets_every_key_to_its_default() -> None:
    from swival.starter import example_text

    for name, value in tomllib.loads(example_text()).items():
        key = KEYS_BY_NAME[name]
        expected = tuple(key.default) if isinstance(key.default, list) else key.default
        assert coerce(key, value, "example") == expected, name


def test_no_text_for_people_points_at_a_file_an_installed_swival_lacks() -> None:
    """Messages may not send a pip or pipx user to docs/ or to the repository's files."""
    import ast

    for path in sorted((ROOT / "swival").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                assert "docs/" not in node.value, f"{path.name}: {node.value[:80]}"
                assert node.value == "swival.toml.example" or ".example" not in node.value
