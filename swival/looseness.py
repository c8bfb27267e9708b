"""Which setting values are no looser than others, for project trust.

A project's `swival.toml` may set a trusted-only key without the user's trust when its
value is no looser than the one the run would use without the project file (see
`swival.config.Key`). Each function here answers that for one kind of key:
`(value, baseline, values) -> bool`, where `baseline` is the value without the project
file and `values` everything the run would use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

NoLooser = Callable[[Any, Any, Mapping[str, Any]], bool]
KEYWORDS = ("ask", "all", "none")


def off(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
    """For a switch that loosens when on (`yolo`, `allow_net`)."""
    return value is False


def on(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
    """For a switch that protects when on (`read_only`)."""
    return value is True


def subset(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
    """For lists that widen what is reachable (`add_dir`, `pass_env`)."""
    return set(value) <= set(baseline or ())


def ranked(*order: str) -> NoLooser:
    """For choices listed from the loosest to the safest (`sandbox`: off, auto, on)."""
    def no_looser(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
        return order.index(value) >= order.index(baseline)
    return no_looser


def _words(setting: Any, fold_names: bool) -> set[str]:
    """A `commands` or `fetch` setting as a set of words. For commands a keyword stands
    alone (`git,ask` lists a program named ask) and names keep their case; for fetch
    (`fold_names`) keywords may join hosts, and every word is in lower case."""
    words = [w.strip() for w in str(setting).split(",") if w.strip()]
    if fold_names:
        return {w.lower() for w in words}
    if len(words) == 1 and words[0].lower() in KEYWORDS:
        return {words[0].lower()}
    return set(words)


def narrower_policy(fold_names: bool) -> NoLooser:
    """For `commands` (names as written) and `fetch` (`fold_names`: host names): `none`
    is the narrowest; `ask` asks about everything, so it is narrower than any list or
    `all`; a list is narrower than a list holding all of it. A list of commands is
    narrower than `all`; a list of hosts is not (it may name private hosts, which `all`
    leaves out)."""
    def no_looser(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
        mine, theirs = _words(value, fold_names), _words(baseline, fold_names)
        if "none" in mine and (fold_names or mine == {"none"}):
            return True
        if "none" in theirs and (fold_names or theirs == {"none"}):
            return False
        if mine == {"ask"}:
            return True
        if theirs == {"all"} and not fold_names:
            return True
        asked = {"ask"} if fold_names else set()  # in a fetch list, `ask` adds no host
        return mine - asked <= theirs - asked
    return no_looser


def fewer_tools(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
    """For `subagent_tools`: `read-only` adds no tool, so it is the narrowest; a list of
    tools is no looser than `all`, or than a list holding all of it."""
    mine, theirs = _words(value, False), _words(baseline, False)
    if mine <= {"read-only"} or theirs == {"all"}:
        return True
    return "all" not in mine and mine <= theirs


def servers_kept(value: Any, baseline: Any, values: Mapping[str, Any]) -> bool:
    """For MCP server tables: each of the project's tables repeats one of the user's own
    exactly, or only switches it off."""
    theirs = dict(baseline or {})
    return all(name in theirs and (entry == theirs[name] or (
        entry.get("enabled") is False
        and {**entry, "enabled": True} == {**theirs[name], "enabled": True}))
        for name, entry in dict(value or {}).items())
