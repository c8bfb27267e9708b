"""A shell command, parsed with tree-sitter's bash grammar into what the policy checks.

`parse(command)` returns a `Script`: the simple commands in order (their words after
quote removal, their redirections), the operators joining them, and every construct that
keeps the script from being only that, each named for a person ("a subshell `( … )`").
A script with no constructs is exactly: simple commands whose words are all literal,
joined by `;`, a newline, `&&`, `||` or `|`.

What bash runs must be what was checked, so the accepted grammar is small and every byte
is accounted for: text the parser skips (a line continuation, a comment, a control
character, anything between two nodes that is not a space, tab or newline) is itself a
construct. If tree-sitter cannot be loaded, the script holds one construct saying so and
the caller fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

SEPARATORS = {";": ";", "&&": "&&", "||": "||", "|": "|", "|&": "|"}
WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
READS = frozenset({"<", "<&"})
CLOSES = frozenset({">&-", "<&-"})
GAP_CHARS = frozenset(" \t\n")
GLOB_CHARS = frozenset("*?[")
SPECIAL_CHARS = frozenset("$`()<>;&|\"' \t\n")
WORD_NODES = frozenset({"word", "number"})
BLOCKS = {
    "subshell": "a subshell `( … )`",
    "function_definition": "a function definition",
    "negated_command": "a negation `!`",
    "if_statement": "an `if` block",
    "while_statement": "a `while` or `until` loop",
    "for_statement": "a `for` loop",
    "c_style_for_statement": "a `for` loop",
    "case_statement": "a `case` block",
    "comment": "a comment `#`",
    "heredoc_redirect": "a heredoc `<<`",
    "herestring_redirect": "a here-string `<<<`",
    "unset_command": "`unset`, which changes shell variables",
}
EXPANSIONS = {
    "simple_expansion": "a variable expansion `{}`",
    "expansion": "a variable expansion `{}`",
    "process_substitution": "process substitution `{}`",
    "arithmetic_expansion": "arithmetic expansion `$(( … ))`",
    "brace_expression": "brace expansion `{}`",
    "ansi_c_string": "a `$'…'` string",
    "translated_string": "a `$\"…\"` string",
}


@dataclass(frozen=True)
class Redirect:
    """One redirection: `op` as written (`>`, `>>`, `<`, `2>&1` gives `>&`), `target`
    the literal path after quote removal, or None for a descriptor duplication or close."""

    op: str
    target: str | None

    @property
    def writes(self) -> bool:
        return self.target is not None and self.op in WRITES


@dataclass(frozen=True)
class SimpleCommand:
    """`words[0]` is the program as written; the rest are its arguments, in order."""

    words: tuple[str, ...]
    redirects: tuple[Redirect, ...] = ()


@dataclass(frozen=True)
class Script:
    """`operators[i]` joins `commands[i]` and `commands[i + 1]` (`;` for a newline).
    `constructs` is empty exactly when the script is nothing but those commands."""

    commands: tuple[SimpleCommand, ...]
    operators: tuple[str, ...]
    constructs: tuple[str, ...]
    missing: str | None = None  # why the parser could not be loaded (then nothing parsed)


class _NotLiteral(Exception):
    """A word is not literal; the message names the construct."""


@dataclass
class _Builder:
    source: bytes
    commands: list[SimpleCommand] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)
    constructs: list[str] = field(default_factory=list)

    def text(self, node: Any) -> str:
        return str(self.source[node.start_byte:node.end_byte].decode("utf-8", "replace"))

    def found(self, what: str) -> None:
        if what not in self.constructs:
            self.constructs.append(what)


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def parser_problem() -> str | None:
    """Why the bash parser cannot be loaded (tree-sitter or its grammar missing, or
    built for another version), or None when it can."""
    try:
        _parser()
    except Exception as exc:  # ImportError, or a grammar built for another tree-sitter
        return f"{type(exc).__name__}: {exc}"
    return None


def parse(command: str) -> Script:
    """Describe `command` (see the module docstring); never raises. Without a parser
    (`missing` says why) the script has one construct and no commands."""
    missing = parser_problem()
    if missing is not None:
        return Script((), (), ("every command, since Swival's shell parser could not be "
                               f"loaded ({missing}); installing Swival again brings it back",),
                      missing)
    parser = _parser()
    prefilter = _raw_text_problem(command)
    if prefilter:
        return Script((), (), (prefilter,))
    out = _Builder(command.encode("utf-8"))
    try:
        root = parser.parse(out.source).root_node
    except Exception as exc:
        return Script((), (), (f"the shell parser failed ({exc})",))
    edges = out.source[:root.start_byte] + out.source[root.end_byte:]
    if root.has_error:
        out.found("shell syntax that does not parse (an unclosed quote or bracket?)")
    elif edges.strip(b" \t\n"):
        out.found(f"text the shell parser skipped (`{edges.decode().strip()[:20]}`)")
    else:
        _sequence(root, out)
    return Script(tuple(out.commands), tuple(out.operators), tuple(out.constructs))


def _raw_text_problem(command: str) -> str | None:
    """Text the grammar skips or reads differently from bash, found before parsing."""
    if "\\\n" in command:
        return "a line continuation (backslash-newline)"
    bad = next((c for c in command if (ord(c) < 32 and c not in "\t\n") or ord(c) == 127
                or 0xD800 <= ord(c) <= 0xDFFF), None)
    if bad is not None:
        return f"a control character ({bad!r})"
    return None


def _gaps_ok(node: Any, out: _Builder, allowed: frozenset[str] = GAP_CHARS) -> bool:
    """True when nothing but `allowed` characters lies between `node`'s children."""
    position = node.start_byte
    for child in [*node.children, None]:
        end = node.end_byte if child is None else child.start_byte
        gap = out.source[position:end].decode("utf-8", "replace")
        if any(c not in allowed for c in gap):
            out.found(f"text the shell parser skipped (`{gap.strip()[:20]}`)")
            return False
        position = position if child is None else child.end_byte
    return True


def _sequence(node: Any, out: _Builder, tail: tuple[Any, ...] = ()) -> None:
    """A program, list or pipeline: statements joined by operators. `tail` holds
    redirections written after the whole sequence: bash gives them to its last command."""
    if not _gaps_ok(node, out):
        return
    statements = [c for c in node.children if c.is_named and c.type != "comment"]
    previous_was_statement = False
    for child in node.children:
        if child.is_named and child.type != "comment":
            if previous_was_statement:
                out.operators.append(";")  # statements separated by a newline
            _statement(child, out, tail if child == statements[-1] else ())
            previous_was_statement = True
            continue
        previous_was_statement = False
        token = out.text(child)
        if child.type == "comment":
            out.found(BLOCKS["comment"])
        elif token == "&":
            out.found("running in the background `&`")
        elif token in SEPARATORS:
            out.operators.append(SEPARATORS[token])
        else:
            out.found(f"the operator `{token}`")
    # A trailing `;` joins nothing.
    del out.operators[max(0, len(out.commands) - 1):]


def _statement(node: Any, out: _Builder, tail: tuple[Any, ...] = ()) -> None:
    kind = node.type
    if kind in ("list", "pipeline"):
        _sequence(node, out, tail)
    elif kind == "command":
        _command(node, tail, out)
    elif kind == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = (*node.children_by_field_name("redirect"), *tail)
        if body is None:
            out.found("a redirection with no command")
        elif _gaps_ok(node, out):
            _statement(body, out, redirects)
    else:
        out.found(_block_name(node, out))


def _block_name(node: Any, out: _Builder) -> str:
    kind, text = node.type, out.text(node)
    if kind in BLOCKS:
        return BLOCKS[kind]
    if kind == "compound_statement":
        return "arithmetic `(( … ))`" if text.startswith("((") else "a group `{ … }`"
    if kind == "test_command":
        return "a test `[[ … ]]`" if text.startswith("[[") else "a test `[ … ]`"
    if kind == "declaration_command":
        return f"`{text.split()[0]}`, which sets shell variables"
    if kind in ("variable_assignment", "variable_assignments"):
        return f"a variable assignment `{text.split('=')[0]}=…`"
    return f"shell syntax this policy does not accept (`{text[:30]}`)"


def _command(node: Any, outer: tuple[Any, ...], out: _Builder) -> None:
    """A simple command; `outer` holds redirections written after it."""
    before = len(out.constructs)
    if not _gaps_ok(node, out):
        return
    words: list[tuple[int, str]] = []
    redirects: list[Redirect] = []
    if _joined([c for c in node.children if "redirect" not in c.type]):
        out.found(f"words the parser splits where bash does not (`{out.text(node)[:30]}`)")
        return
    for child in [*node.children, *outer]:
        try:
            if child.type == "command_name":
                words.append((child.start_byte, _program(child, out)))
            elif child.type == "file_redirect":
                redirects.append(_redirect(child, words, out))
            elif child.type in ("variable_assignment", "heredoc_redirect",
                                "herestring_redirect", "comment"):
                out.found(_block_name(child, out))
            else:
                words.append((child.start_byte, _literal(child, out)))
        except _NotLiteral as problem:
            out.found(str(problem))
    words.sort()
    if words and len(out.constructs) == before:
        out.commands.append(SimpleCommand(tuple(w for _, w in words), tuple(redirects)))


def _joined(nodes: list[Any]) -> bool:
    """True when two consecutive nodes touch: bash reads them as one word."""
    return any(a.end_byte == b.start_byte for a, b in zip(nodes, nodes[1:], strict=False))


def _program(node: Any, out: _Builder) -> str:
    word = node.children[0] if node.child_count == 1 else None
    text = out.text(node)
    if word is None or word.type != "word" or "\\" in text:
        raise _NotLiteral(f"a program name that is quoted, escaped or built (`{text[:30]}`)")
    return _literal(word, out)


def _redirect(node: Any, words: list[tuple[int, str]], out: _Builder) -> Redirect:
    """The redirection; words bash gives the command (`echo > f extra`) go to `words`."""
    if not _gaps_ok(node, out):
        raise _NotLiteral("a redirection the policy cannot read")
    operators = [c for c in node.children if not c.is_named]
    targets = node.children_by_field_name("destination")
    if len(operators) != 1 or _joined(targets):
        raise _NotLiteral(f"the redirection `{out.text(node)[:30]}`")
    op = out.text(operators[0])
    if op in CLOSES and not targets:
        return Redirect(op, None)
    if not targets or op not in WRITES | READS:
        raise _NotLiteral(f"the redirection `{out.text(node)[:30]}`")
    words.extend((t.start_byte, _literal(t, out)) for t in targets[1:])
    target = _literal(targets[0], out)
    if op in (">&", "<&") and (target.isdigit() or target == "-"):
        return Redirect(op, None)
    return Redirect(op, target)


def _literal(node: Any, out: _Builder) -> str:
    """The word after quote removal; raises _NotLiteral naming what expands in it."""
    kind, text = node.type, out.text(node)
    if kind in WORD_NODES:
        return _unquoted(text)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        inner = [c for c in node.children if c.is_named and c.type != "string_content"]
        if inner:
            raise _NotLiteral(_expansion_name(inner[0], out.text(inner[0])))
        return _double_quoted(text[1:-1])
    if kind == "concatenation":
        if not _gaps_ok(node, out, frozenset()):
            raise _NotLiteral("a word the policy cannot read")
        return "".join(_literal(part, out) for part in node.children)
    raise _NotLiteral(_expansion_name(node, text))


def _expansion_name(node: Any, text: str) -> str:
    if node.type == "command_substitution":
        return ("command substitution with backticks `…`" if text.startswith("`")
                else "command substitution `$( … )`")
    if node.type in EXPANSIONS:
        return EXPANSIONS[node.type].replace("{}", text[:30])
    return f"a word this policy does not accept (`{text[:30]}`)"


def _unquoted(text: str) -> str:
    """Quote removal for an unquoted word; anything bash would expand is refused."""
    chars, escaped = [], False
    for i, c in enumerate(text):
        if escaped:
            chars.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in GLOB_CHARS:
            raise _NotLiteral(f"a wildcard `{c}` in `{text[:30]}`")
        elif c in "{}":
            raise _NotLiteral(f"a brace `{c}` in `{text[:30]}` (brace expansion)")
        elif c == "~" and (i == 0 or text[i - 1] in "=:"):
            raise _NotLiteral(f"a tilde `~` in `{text[:30]}` (home directory expansion)")
        elif c in SPECIAL_CHARS or (c == "#" and i == 0):
            raise _NotLiteral(f"the special character `{c}` in `{text[:30]}`")
        else:
            chars.append(c)
    if escaped:
        raise _NotLiteral(f"a trailing backslash in `{text[:30]}`")
    return "".join(chars)


def _double_quoted(text: str) -> str:
    """Quote removal inside double quotes: `\\` escapes only `$`, backtick, `"` and `\\`."""
    chars, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\':
            chars.append(text[i + 1])
            i += 2
            continue
        if c in "$`":
            raise _NotLiteral(f"`{c}` inside double quotes")
        chars.append(c)
        i += 1
    return "".join(chars)
