"""What a launch settles before anything starts: the project's keys that need trust
(recorded trust, `--trust`, `--untrust`, or the question asked in a terminal) and
`--init-config`. Imported by cli.py once the options are parsed, so `--help` and
`--version` never load it.
"""

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swival.errors import ConfigError

if TYPE_CHECKING:
    from swival.config import Settings, TrustCheck


def load(given: dict[str, Any], config: Path | None, trust: bool | None) -> "Settings":
    """Settings with the project's keys that need trust applied when the user trusts it:
    recorded trust, or `--trust` (which records it); `--untrust` forgets it first."""
    from swival.config import find_project_root, load_settings
    from swival.render import say
    from swival.trust import TrustStore

    store = TrustStore.for_user(os.environ)
    if trust is False and store.forget(find_project_root(Path.cwd()) / "swival.toml"):
        say("swival: this project's swival.toml is no longer trusted.")
    settings = load_settings(given, config_path=config,
                             trusted=_trust_all if trust else store.check)
    if trust and settings.trust_keys:
        _remember(settings, settings.trust_keys)
    return settings


def _trust_all(file: Path, keys: Mapping[str, Any]) -> bool:
    return True


def _remember(settings: "Settings", keys: Mapping[str, Any]) -> None:
    """Record trust in the project's keys; a record that cannot be written is said, and
    the keys still apply to this run."""
    from swival.render import say
    from swival.trust import TrustStore

    try:
        TrustStore.for_user(os.environ).record(settings.project_file, keys)
    except ConfigError as error:
        say(f"swival: {error} The keys apply to this run only.")


def settle_trust(settings: "Settings", reload: "Callable[[TrustCheck], Settings]",
                 ask: bool) -> "Settings":
    """Before connecting (the keys may choose the server): ask about the project keys
    held back, or say on stderr that they are ignored."""
    from swival.render import say
    from swival.trust import TrustStore, ignored_notice, question

    if not settings.held_back:
        return settings
    store = TrustStore.for_user(os.environ)
    if not ask:
        say(f"swival: {ignored_notice(settings, store)}")
        return settings
    print(question(settings, store), file=sys.stderr)
    shown = dict(settings.held_back)
    while True:
        print("Trust this project and apply them? [y] yes, and remember  [n] no, continue "
              "without them: ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer in ("n", "no", ""):
            print("Continuing without them (swival --trust applies them later).",
                  file=sys.stderr)
            return settings
        if answer in ("y", "yes"):
            _remember(settings, shown)
            return reload(lambda file, keys: dict(keys) == shown)  # exactly what was shown


def init_config(settings: "Settings", init: str) -> int:
    """--init-config: write the starter (a project one is trusted: it holds the user's own
    choices) or print it."""
    from swival.config import load_settings
    from swival.starter import starter_text, write_starter_config

    if init == "stdout":
        print(starter_text(settings), end="")
        return 0
    path = write_starter_config(settings, global_=init == "global")
    print(f"Wrote {path}", file=sys.stderr)
    if init == "project":
        written = load_settings({}, config_path=None, trusted=_trust_all)
        _remember(written, written.trust_keys)
    return 0
