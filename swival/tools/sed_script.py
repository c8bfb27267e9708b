"""sed's command line and scripts, read closely enough to find what runs or writes.

`risk(args)` names an `e`, `w` or `W` command, an `s///e` or `s///w` flag, a script read
from a file (`-f`), an `-i` backup name that leads elsewhere, or anything this reader
does not understand; `parse_args(args)` also gives the files `-i` rewrites. GNU sed's
`--sandbox` mode refuses the same commands, and the tests check the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FLAGS = frozenset("nErsuz")
LONG_FLAGS = frozenset({
    "--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered", "--null-data",
    "--zero-terminated", "--posix", "--debug", "--sandbox", "--follow-symlinks",
    "--binary", "--help", "--version",
})
SIMPLE = frozenset("pPnNdDgGhHxlLqQzF=")
TO_EOL = frozenset("aicrR#")
LABEL = frozenset("btT:")


@dataclass
class SedArgs:
    """sed's scripts and file operands, whether it edits in place, and any risk found."""

    scripts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    in_place: bool = False
    risk: str | None = None


def risk(args: list[str]) -> str | None:
    """What in sed's arguments or scripts runs a command or writes a file, or None."""
    parsed = parse_args(args)
    if parsed.risk:
        return parsed.risk
    return next(filter(None, map(script_risk, parsed.scripts)), None)


def parse_args(args: list[str]) -> SedArgs:
    """sed's options, scripts and file operands; anything unknown is a risk."""
    out, operands, i = SedArgs(), [], 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands += args[i:]
            break
        if arg.startswith("--"):
            name, _, value = arg.partition("=")
            if name in ("--expression", "--line-length"):
                given = value if "=" in arg else args[i] if i < len(args) else ""
                out.scripts += [given] if name == "--expression" else []
                i += "=" not in arg  # the value may be the next word
            elif name == "--in-place":
                out.in_place, out.risk = True, out.risk or _suffix(value)
            elif name not in LONG_FLAGS:
                out.risk = f"`sed {name}`, an option that reads commands from a file or is unknown"
        elif arg.startswith("-") and len(arg) > 1:
            i = _short(arg[1:], args, i, out)
        else:
            operands.append(arg)
    if not out.scripts and operands:
        out.scripts.append(operands.pop(0))
    out.files = operands
    return out


def _short(cluster: str, args: list[str], i: int, out: SedArgs) -> int:
    """One cluster such as `-ni.bak`; returns the index of the next argument."""
    for k, c in enumerate(cluster):
        rest = cluster[k + 1:]
        if c in FLAGS:
            continue
        if c == "i":
            out.in_place, out.risk = True, out.risk or _suffix(rest)
        elif c in "el":
            value = rest or (args[i] if i < len(args) else "")
            if c == "e":
                out.scripts.append(value)
            return i + (not rest)
        else:
            out.risk = f"`sed -{c}`, an option that reads commands from a file or is unknown"
        return i
    return i


def _suffix(suffix: str) -> str | None:
    if "/" in suffix or "*" in suffix:
        return f"`sed -i{suffix}`, a backup name that can write elsewhere"
    return None


def script_risk(script: str) -> str | None:
    """None when the script has no `e`, `w` or `W` command and no `s///e` or `s///w`;
    anything this reader does not understand is a risk too."""
    i = 0
    while i < len(script):
        c = script[i]
        if c in " \t\n;{}!,~+$" or c.isdigit():
            i += 1
        elif c in "/\\":
            i = _skip_regex(script, i + (c == "\\"), address=True)
        elif c in ("s", "y"):
            i, flags = _substitution(script, i + 1, c)
            if "e" in flags:
                return "sed's `s///e`, which runs the result as a command"
            if "w" in flags:
                return "sed's `s///w`, which writes a file"
        elif c in SIMPLE:
            i += 1
        elif c in TO_EOL:
            i = _end_of_text(script, i + 1)
        elif c in LABEL:
            i = _label_end(script, i + 1)
        elif c in "ewW":
            return f"sed's `{c}` command, which {'runs a command' if c == 'e' else 'writes a file'}"
        else:
            return f"a sed script this check cannot read (at `{script[i:i + 10]}`)"
        if i < 0:
            return "a sed script this check cannot read (unterminated)"
    return None


def _skip(script: str, i: int, brackets: bool) -> int:
    """From the delimiter at `i`, the index after the closing one (escapes honoured, and
    bracket expressions when `brackets`); -1 when unterminated."""
    if i >= len(script) or script[i] in "\n\\":
        return -1
    delimiter, i = script[i], i + 1
    while i < len(script):
        c = script[i]
        if c == delimiter:
            return i + 1
        if c == "\n":
            return -1
        i = i + 2 if c == "\\" else _bracket_end(script, i) if brackets and c == "[" else i + 1
        if i < 0:
            return -1
    return -1


def _skip_regex(script: str, i: int, address: bool) -> int:
    """An address regex (`/re/I`) from its delimiter; -1 when unterminated."""
    i = _skip(script, i, brackets=True)
    while address and 0 <= i < len(script) and script[i] in "IM":
        i += 1
    return i


def _bracket_end(script: str, i: int) -> int:
    """The index after the `]` closing the bracket expression opened at `i`, or -1."""
    j = i + 1
    j += script.startswith("^", j)
    j += script.startswith("]", j)
    while j < len(script):
        if script[j] == "[" and script[j + 1:j + 2] in (":", ".", "="):
            close = script.find(script[j + 1] + "]", j + 2)
            if close < 0:
                return -1
            j = close + 2
        elif script[j] == "]":
            return j + 1
        else:
            j += 1
    return -1


def _substitution(script: str, i: int, command: str) -> tuple[int, str]:
    """`s/re/text/flags` or `y/src/dst/` from its delimiter: (index after it, flags)."""
    end = _skip(script, i, brackets=command == "s")
    if end < 0:
        return -1, ""
    end = _skip(script, end - 1, brackets=False)
    if end < 0 or command == "y":
        return end, ""
    start = end
    while end < len(script) and script[end] in "gpiImMe0123456789w":
        end += 1
        if script[end - 1] == "w":
            return _end_of_text(script, end), script[start:end]
    return end, script[start:end]


def _end_of_text(script: str, i: int) -> int:
    """The index after the line that starts at `i` (a backslash-newline continues it)."""
    while i < len(script):
        if script[i] == "\\":
            i += 2
        elif script[i] == "\n":
            return i + 1
        else:
            i += 1
    return len(script)


def _label_end(script: str, i: int) -> int:
    """The index after a label: blanks, then anything up to a blank, newline or `;`."""
    while i < len(script) and script[i] in " \t":
        i += 1
    while i < len(script) and script[i] not in " \t\n;":
        i += 1
    return i
