"""Argument repair: our parser against the json-repair library on the same table.

The table is the one tests/test_providers_jsonfix.py checks (broken tool arguments shaped like
what small models send, plus rows that must stay errors). A row counts as right when the
result is exactly the object meant, or an error where no object can be read without
guessing. json-repair is not a dependency: install it to compare (`pip install json-repair`);
without it only our column is printed.

    python benchmarks/repair_compare.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swival.providers.jsonfix import parse_arguments  # noqa: E402
from tests.test_providers_jsonfix import TABLE  # noqa: E402

Parser = Callable[[str], Any]


def ours(raw: str) -> Any:
    parsed = parse_arguments(raw)
    return None if parsed.error else parsed.value


def library() -> Parser | None:
    try:
        import json_repair
    except ImportError:
        return None

    def parse(raw: str) -> Any:
        try:
            value = json_repair.loads(raw)
        except RecursionError:
            return "RecursionError"
        return value if isinstance(value, dict) and value else None

    return parse


def score(parse: Parser) -> tuple[int, list[str], float]:
    right, wrong = 0, []
    started = time.perf_counter()
    for shape, raw, meant in TABLE:
        got = parse(raw)
        if got == meant:
            right += 1
        else:
            wrong.append(f"{shape}: {raw[:40]!r} -> {got!r}"[:110])
    per_row = (time.perf_counter() - started) / len(TABLE) * 1e6
    return right, wrong, per_row


def main() -> None:
    deep = "[" * 5000
    rows: list[tuple[str, Parser]] = [("swival jsonfix", ours)]
    lib = library()
    if lib is not None:
        rows.append(("json-repair", lib))
    print(f"| parser | right of {len(TABLE)} | µs per row | 5000 unclosed `[` |")
    print("|---|---:|---:|---|")
    misses = []
    for name, parse in rows:
        right, wrong, per_row = score(parse)
        deep_result = {None: "error", "RecursionError": "RecursionError"}.get(parse(deep),
                                                                              "object")
        print(f"| {name} | {right} | {per_row:.0f} | {deep_result} |")
        misses += [f"{name} — {w}" for w in wrong]
    for miss in misses:
        print(f"- {miss}")


if __name__ == "__main__":
    main()
