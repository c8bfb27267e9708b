"""The words of an approval question, the same in the REPL (swival/repl/approve.py) and
in a one-shot run started from a terminal (swival/oneshot.py): the question, the
answers offered, how an answer is read and what is said about one that is not an
answer. Each front end only draws them its own way."""

from __future__ import annotations

from swival.tools.approval import Answer

ALWAYS_KEYS = "as"  # the keys that answer "always", one per scope offered


def command_question(shown: str, who: str = "") -> str:
    """`Run `make`?`, or `Subagent 1 asks: run `make`?` while a subagent runs."""
    return f"{who.capitalize()} asks: run `{shown}`?" if who else f"Run `{shown}`?"


def action_question(action: str, who: str = "") -> str:
    """`Change f.txt?` (an edit, a fetch, an MCP call), or `Subagent 1 asks: change
    f.txt?`."""
    if not who:
        return f"{action}?"
    return f"{who.capitalize()} asks: {action[:1].lower()}{action[1:]}?"


def found_line(found: tuple[str, ...] | list[str]) -> str:
    """What makes a command need approval every time, or "" when nothing does."""
    return f"Needs approval every time: {'; '.join(found)}." if found else ""


def options(scopes: tuple[str, ...]) -> str:
    """The answers offered: `[y]es once / [a]lways allow git / [n]o: ` (no "always"
    when no scope is offered)."""
    offers = [f"[a]lways allow {scope}" if key == "a" else f"[{key}] always allow {scope}"
              for key, scope in zip(ALWAYS_KEYS, scopes, strict=False)]
    return " / ".join(["[y]es once", *offers, "[n]o"]) + ": "


def read_answer(reply: str, scopes: tuple[str, ...]) -> tuple[Answer, str] | None:
    """The answer typed, with the scope chosen for "always"; None when `reply` is not a
    whole answer (y, yes, once; n, no, deny or nothing; a or always, s; in any case), so
    "abort" is never taken for "always"."""
    reply = reply.strip().lower()
    if reply in ("y", "yes", "once"):
        return "once", ""
    if reply in ("n", "no", "deny", ""):
        return "deny", ""
    keys = dict(zip(ALWAYS_KEYS, scopes, strict=False))
    if reply == "always" and scopes:
        return "always", scopes[0]
    if reply in keys:
        return "always", keys[reply]
    return None


def not_an_answer(reply: str, scopes: tuple[str, ...]) -> str:
    """Said when `reply` is not one of the answers (the question is then asked again)."""
    answers = ["y (once)", *(f"{key} (always)" for key in ALWAYS_KEYS[:len(scopes)])]
    listed = ", ".join(answers) + ("," if len(answers) > 1 else "")
    return f"`{reply.strip()}` is not one of the answers. Answer {listed} or n (no)."
