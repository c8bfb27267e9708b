"""The tree-sitter description of a shell command, checked against what real bash runs."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from swival.tools.shell_parse import Redirect, Script, SimpleCommand, parse


def test_simple_commands_operators_and_redirections() -> None:
    script = parse("cd sub && git log --oneline | head -5 > out.txt 2>&1; ls\npwd")
    assert script == Script(
        commands=(SimpleCommand(("cd", "sub")), SimpleCommand(("git", "log", "--oneline")),
                  SimpleCommand(("head", "-5"), (Redirect(">", "out.txt"), Redirect(">&", None))),
                  SimpleCommand(("ls",)), SimpleCommand(("pwd",))),
        operators=("&&", "|", ";", ";"),
        constructs=(),
    )


@pytest.mark.parametrize(("command", "words"), [
    ("git commit -m 'a b; (c)'", ("git", "commit", "-m", "a b; (c)")),
    ('echo "say \\"hi\\" \\\\ \\$HOME"', ("echo", 'say "hi" \\ $HOME')),
    ("echo e\\ f a\\;b", ("echo", "e f", "a;b")),
    ("echo 'x'y\"z\"", ("echo", "xyz")),
    ("echo ''", ("echo", "")),
    ("git log HEAD~1 --format=%H", ("git", "log", "HEAD~1", "--format=%H")),
    ("echo > f extra words", ("echo", "extra", "words")),
])
def test_quote_removal(command: str, words: tuple[str, ...]) -> None:
    script = parse(command)
    assert script.constructs == () and script.commands[0].words == words


def test_redirections_after_a_list_belong_to_its_last_command() -> None:
    """tree-sitter hangs `a && b > f` on the whole list; bash gives `> f` to `b` only."""
    script = parse("cd sub && git status > ../../x")
    assert script.commands[0].redirects == ()
    assert script.commands[1].redirects == (Redirect(">", "../../x"),)


@pytest.mark.parametrize(("op", "target", "writes"), [
    (">", "f", True), (">>", "f", True), (">|", "f", True), ("&>", "f", True),
    ("&>>", "f", True), (">&", "f", True), ("<", "f", False), ("2>&", "1", False),
    ("<&", "0", False), (">&", "-", False),
])
def test_redirection_kinds(op: str, target: str, writes: bool) -> None:
    redirect = parse(f"ls {op}{target}").commands[0].redirects[0]
    assert redirect.writes is writes
    assert redirect.target == (None if target in "-01" else target)


@pytest.mark.parametrize(("command", "named"), [
    ("(ls)", "a subshell `( … )`"),
    ("{ ls; }", "a group `{ … }`"),
    ("f() { ls; }", "a function definition"),
    ("ls $(pwd)", "command substitution `$( … )`"),
    ("ls `pwd`", "command substitution with backticks `…`"),
    ("ls \"`pwd`\"", "command substitution with backticks `…`"),
    ("ls <(pwd)", "process substitution `<(pwd)`"),
    ("ls $HOME", "a variable expansion `$HOME`"),
    ("ls ${HOME}", "a variable expansion `${HOME}`"),
    ("ls \"$HOME\"", "a variable expansion `$HOME`"),
    ("ls $((1+2))", "arithmetic expansion `$(( … ))`"),
    ("((x++))", "arithmetic `(( … ))`"),
    ("X=1 ls", "a variable assignment `X=…`"),
    ("X=1", "a variable assignment `X=…`"),
    ("export X=1", "`export`, which sets shell variables"),
    ("cat <<EOF\nx\nEOF", "a heredoc `<<`"),
    ("cat <<< x", "a here-string `<<<`"),
    ("ls &", "running in the background `&`"),
    ("ls # note", "a comment `#`"),
    ("ls *.py", "a wildcard `*`"),
    ("ls a?", "a wildcard `?`"),
    ("ls [ab]", "a wildcard `[`"),
    ("ls {a,b}", "brace"),
    ("ls ~/x", "a tilde `~`"),
    ("ls a=~/x", "a tilde `~`"),
    ("ls $'a'", "a `$'…'` string"),
    ("'ls' -l", "a program name that is quoted"),
    ("l\\s", "a program name that is quoted, escaped"),
    ("! ls", "a negation `!`"),
    ("[ -f x ]", "a test `[ … ]`"),
    ("[[ -f x ]]", "a test `[[ … ]]`"),
    ("if true; then ls; fi", "an `if` block"),
    ("for i in a; do ls; done", "a `for` loop"),
    ("while true; do ls; done", "a `while` or `until` loop"),
    ("case x in x) ls;; esac", "a `case` block"),
    ("ls;;", "the operator `;;`"),
    ("> f", "a redirection with no command"),
    ("ls\\\n-l", "a line continuation"),
    ("ls\r-l", "a control character"),
    ("ls 'unclosed", "does not parse"),
    ("ls \\ -l", "text the shell parser skipped"),
    ("\\  ls -l", "text the shell parser skipped"),
])
def test_constructs_are_named(command: str, named: str) -> None:
    constructs = parse(command).constructs
    assert constructs and any(named in c for c in constructs), constructs


def test_every_construct_is_listed_once() -> None:
    script = parse("(a); (b); ls $(x) $(y)")
    assert script.constructs == ("a subshell `( … )`", "command substitution `$( … )`")


# --- differential check against bash ------------------------------------------------

PLAIN = ["p1", "p2", "cd", "d1", "..", "a", "'b c'", '"d e"', "f\\ g", "--o=v", "x=1", ";",
         "&&", "||", "|", "\n", ">", ">>", "2>&1", "<", "f1", "f2", "\\;", "=", "HEAD~1", "\\c",
         "'q'", '"r"', "../f3"]
HOSTILE = ["&", "(", ")", "{", "}", "$x", "`p1`", "$(p1)", "\\", "'", '"', "*", "~", "#", "!",
           "<<", "\\\n", "\r", "|&", ";;", "&>"]
STUB = """#!/bin/sh
printf '%s\\037' "$PWD" "${0##*/}" "$@" >> "$LOG"
printf '\\036' >> "$LOG"
[ "${0##*/}" = p1 ]
"""


def _script(rng: random.Random) -> str:
    pieces = [rng.choice(["p1", "p2"] * 20 + HOSTILE + ["\\ ", " "])]
    for _ in range(rng.randint(1, 9)):
        piece = rng.choice(PLAIN if rng.random() < 0.85 else HOSTILE)
        pieces.append(rng.choice(["", " ", " ", " "]) + piece)
    return "".join(pieces)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_runs_nothing_the_parse_did_not_show(tmp_path: Path) -> None:
    """Random scripts from shell fragments: for each one the parse accepts, run it with
    real bash and check that every program it started, with its exact arguments, and
    every file it created appear in the parse."""
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir()
    for name in ("p1", "p2"):
        (bin_dir / name).write_text(STUB)
        (bin_dir / name).chmod(0o755)
    rng, accepted = random.Random(10), 0
    for n in range(700):
        command = _script(rng)
        script = parse(command)
        if script.constructs:
            continue
        accepted += 1
        work = tmp_path / f"w{n}" / "in"
        (work / "d1").mkdir(parents=True)
        (work / "f1").write_text("in\n")
        env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "LOG": str(log),
               "HOME": str(tmp_path / "home"), "CDPATH": ""}
        log.write_text("")
        subprocess.run(["bash", "-c", command], cwd=work, env=env, timeout=10,
                       stdin=subprocess.DEVNULL, capture_output=True)
        ran = [r.split("\037")[1:-1] for r in log.read_text().split("\036") if r]
        parsed = [list(c.words) for c in script.commands]
        assert all(argv in parsed for argv in ran), (command, ran, parsed)
        targets = {(cwd / r.target).resolve() for c in script.commands for r in c.redirects
                   if r.writes and r.target for cwd in (work, work / "d1")}
        created = {p for p in work.parent.rglob("*") if p.is_file()} - {work / "f1"}
        assert created <= targets, (command, created, targets)
    assert accepted >= 100, "the generator should give the parse enough plain scripts"
