"""Safety evidence counted by the tests themselves.

A test that tries an attack calls `record(kind, case, ...)` once per attempt with what it
observed, before it asserts anything, so a failed protection is counted too. Normally
`record` does nothing; `benchmarks/safety_evidence.py` runs the safety tests with
SWIVAL_EVIDENCE naming a file, gathers the records and prints the table in
docs/safety.md. The figures therefore come from the same case lists the tests use.

Only what a test actually checked is recorded: a field left as None was not measured for
that attempt, and the table shows "—" for a column nothing in a class measured.
"""

from __future__ import annotations

import json
import os
from typing import Literal

Kind = Literal["path escape", "allowlist bypass", "sandbox escape", "untrusted config key",
               "secret leak", "malformed output", "hang"]
KINDS: tuple[Kind, ...] = ("path escape", "allowlist bypass", "sandbox escape",
                           "untrusted config key", "secret leak", "malformed output", "hang")
# How the attempt was made: through the installed `swival` (as a user runs it) or by
# calling the component directly in the test process.
Via = Literal["swival", "in-process"]


def record(kind: Kind, case: str, via: Via, *, escaped: bool | None = None,
           secrets: int | None = None, hung: bool | None = None,
           traceback: bool | None = None) -> None:
    """Note one attempt: `escaped` (the attack took effect), `secrets` (how many places
    held a secret afterwards), `hung` (it did not finish in time), `traceback` (a
    traceback reached the user)."""
    target = os.environ.get("SWIVAL_EVIDENCE")
    if not target:
        return
    row = {"kind": kind, "case": case, "via": via, "escaped": escaped, "secrets": secrets,
           "hung": hung, "traceback": traceback}
    with open(target, "a", encoding="utf-8") as out:
        out.write(json.dumps(row, ensure_ascii=True) + "\n")
