"""Checking one value against its key: the type, the choices, the range, a table's
entries; and how a value may be shown to a person (secrets hidden)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

from swival.config.keys import TABLE_NAME, Key
from swival.errors import ConfigError

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _expected(key: Key) -> str:
    if key.choices:
        return "one of " + ", ".join(repr(c) for c in key.choices)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list of strings", dict: "a table of strings"}
    return names[key.type]


def _table(key: Key, value: Any, origin: str) -> dict[str, dict[str, Any]]:
    """A table of named entries checked against `key.fields`; every problem in it is
    reported in one ConfigError."""
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: `{key.name}` must be tables such as "
                          f"[{key.name}.NAME], got {value!r}.")
    by_name = {f.name: f for f in key.fields}
    problems: list[str] = []
    out: dict[str, dict[str, Any]] = {}
    for entry, given in value.items():
        where = f"{origin}: [{key.name}.{entry}]"
        if not TABLE_NAME.match(entry):
            if not BARE_KEY.fullmatch(entry):  # written as TOML needs it: [t."my.server"]
                where = f"{origin}: [{key.name}.{json.dumps(entry, ensure_ascii=False)}]"
            problems.append(f"{where}: a name holds up to 32 ASCII letters, digits, '-' and "
                            "single '_'; rename the table.")
            continue
        if not isinstance(given, dict):
            problems.append(f"{where} must be a table of keys, got {given!r}.")
            continue
        checked: dict[str, Any] = {}
        for name, item in given.items():
            if name not in by_name:
                hint = difflib.get_close_matches(name, by_name, n=1)
                problems.append(f"{where}: unknown key `{name}`." + (
                    f" Did you mean `{hint[0]}`?" if hint else
                    f" Known keys: {', '.join(by_name)}."))
                continue
            try:
                checked[name] = coerce(by_name[name], item, where)
            except ConfigError as error:
                problems.append(str(error))
        problems += [f"{where}: {text}" for text in (key.check(checked) if key.check else [])]
        out[entry] = {f.name: checked.get(f.name, default_of(f)) for f in key.fields}
    if problems:
        raise ConfigError("\n".join(problems))
    return out


def default_of(key: Key) -> Any:
    """A key's default as a setting holds it (a list as a tuple, a table copied)."""
    return tuple(key.default) if isinstance(key.default, list) else (
        dict(key.default) if isinstance(key.default, dict) else key.default)


def coerce(key: Key, value: Any, origin: str, written: str | None = None) -> Any:
    """Check one value against its key; raise ConfigError naming `origin` on a mismatch,
    with the value as the person wrote it (`written`, else the value as it came)."""
    shown = repr(value) if written is None else written

    def bad(why: str = "") -> ConfigError:
        return ConfigError(f"{origin}: `{key.name}` must be {_expected(key)}{why}, got {shown}.")

    if value is None and key.optional:
        return None
    if key.type is dict and key.fields:
        return _table(key, value, origin)
    if key.type is dict:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise bad()
        return dict(value)
    if key.type is bool:
        if not isinstance(value, bool):
            raise bad()
    elif key.type is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
    elif key.type is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad()
        value = float(value)
    elif key.type is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad()
        value = tuple(value)
    elif not isinstance(value, str):
        raise bad()
    if key.choices and value not in key.choices:
        raise bad()
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = key.minimum, key.maximum
        if low is not None and high is not None and not low <= value <= high:
            raise bad(f" from {low:g} to {high:g}")
        if low is not None and value < low:
            raise bad(f" (at least {low:g})")
    return value


def from_env_text(key: Key, text: str, origin: str) -> Any:
    """Environment values are text: parse them by the key's type first."""
    try:
        if key.type is bool:
            low = text.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off", ""):
                return False
            raise ValueError
        if key.type is int:
            return int(text)
        if key.type is float:
            return float(text)
        if key.type is list:
            return [p.strip() for p in text.split(",") if p.strip()]
    except ValueError:
        raise ConfigError(f"{origin}: `{key.name}` must be {_expected(key)}, got "
                          f"{env_written(key, text)}.") from None
    return text


def env_written(key: Key, text: str) -> str:
    """An environment value as it was written: a number bare, other text quoted."""
    try:
        float(text)
    except ValueError:
        return repr(text)
    return text.strip()


HIDDEN = "(secret, not shown)"


def public_value(key: Key, value: Any) -> Any:
    """`value` as it may be shown to a person: a secret key's value hidden, and in a
    table the values of its secret fields (`env`, `headers`) hidden, their names kept."""
    if key.secret:
        return HIDDEN
    if not (key.fields and isinstance(value, Mapping)):
        return value
    secret = {f.name for f in key.fields if f.secret}
    return {entry: {name: {k: HIDDEN for k in item} if name in secret and isinstance(
        item, Mapping) else item for name, item in fields.items()}
        for entry, fields in value.items()}
