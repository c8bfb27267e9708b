"""The ledger's error lines, table-tested on real output from each ecosystem.

The samples in tests/data/errorlines/ were produced by running the tools (Python
3.11, pytest, numpy, Node 20, gcc, javac, mypy, make, cargo/rustc), with the paths
of the scratch directory replaced by /home/dev/app. No Go or TypeScript toolchain
was at hand: those samples are written in the formats `go test`, the Go runtime,
Jest and tsc print; so is the bracketed unhandled rejection of Node 15-18.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swival.context.errorlines import error_lines
from swival.context.ledger import Ledger
from swival.messages import ToolCall, ToolResult

SAMPLES = Path(__file__).parent / "data" / "errorlines"

TABLE = [
    ("py_numpy.txt", "numpy._core._exceptions._UFuncBinaryResolutionError: ufunc 'add' "
                     "cannot use operands with types dtype('<M8[D]') and dtype('<M8[D]')", None),
    ("py_private.txt", "_PrivateFailure: state machine stuck in DRAINING", None),
    ("py_django.txt", "djx.exceptions.ImproperlyConfigured: Requested setting DEBUG, but "
                      "settings are not configured.", None),
    ("py_keyerror.txt", "KeyError: 'missing'", None),
    ("pytest.txt", "FAILED test_m.py::test_type - TypeError: unsupported operand type(s) "
                   "for -: '...", "2 failed in 7.30s"),
    ("pytest_collect.txt", "E   ModuleNotFoundError: No module named 'missing_pkg'",
     "1 error in 7.50s"),
    ("go_panic.txt", "panic: runtime error: index out of range [5] with length 3",
     "exit status 2"),
    ("go_test.txt", "--- FAIL: TestAdd (0.00s) add_test.go:9: Add(2, 2) = 5, want 4",
     "FAIL\texample.com/add\t0.002s"),
    ("go_build.txt", "./main.go:5:6: undefined: fmt.Printn", None),
    ("rust_build.txt", "error[E0308]: mismatched types --> src/lib.rs:3:5",
     "error: could not compile `rs` (lib) due to 2 previous errors"),
    ("rust_test.txt", "thread 'tests::it_adds' (1806) panicked at src/lib.rs:11:9: "
                      "assertion `left == right` failed",
     "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; "
     "finished in 0.50s"),
    ("node_type.txt", "TypeError: Cannot read properties of undefined (reading 'name')", None),
    ("node_module.txt", "Error: Cannot find module 'express'", None),
    ("node_syntax.txt", "SyntaxError: Unexpected end of input", None),
    ("node_esm_module.txt", "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'express' "
                            "imported from /home/dev/app/index.mjs", None),
    ("node_unhandled.txt", "UnhandledPromiseRejection: The promise rejected with the reason "
                           "\"config file missing\".", None),
    ("node_unhandled_bracketed.txt", "UnhandledPromiseRejection: The promise rejected with "
                                     "the reason \"config file missing\".", None),
    ("jest.txt", "● adds 1 + 2 to equal 3 expect(received).toBe(expected) // Object.is "
                 "equality", "Tests:       1 failed, 1 total"),
    ("gcc.txt", "m.c:4:3: error: expected ‘,’ or ‘;’ before ‘return’", None),
    ("make.txt", "m.c:4:3: error: expected ‘,’ or ‘;’ before ‘return’",
     "make: *** [Makefile:2: all] Error 1"),
    ("javac.txt", "Main.java:1: error: incompatible types: String cannot be converted to int",
     "1 error"),
    ("mypy.txt", "t.py:2: error: Incompatible return value type (got \"int\", expected "
                 "\"str\")  [return-value]", "Found 1 error in 1 file (checked 1 source file)"),
    ("tsc.txt", "src/app.ts(3,7): error TS2322: Type 'string' is not assignable to type "
                "'number'.", "Found 1 error in src/app.ts:3"),
]


@pytest.mark.parametrize(("sample", "cause", "outcome"), TABLE, ids=[t[0] for t in TABLE])
def test_real_output_gives_its_cause_and_verdict(sample: str, cause: str,
                                                 outcome: str | None) -> None:
    text = (SAMPLES / sample).read_text(encoding="utf-8")
    assert error_lines(text) == [cause] + ([outcome] if outcome else [])


def test_every_sample_is_in_the_table() -> None:
    assert sorted(p.name for p in SAMPLES.glob("*.txt")) == sorted(t[0] for t in TABLE)


def test_the_ledger_keeps_the_underscored_exception_of_a_failed_command() -> None:
    """A held-out run lost its last error at every window: the class name starts
    with `_`."""
    ledger = Ledger()
    call = ToolCall("c1", "run_command", {"command": "python -m xarray_check"})
    text = (SAMPLES / "py_numpy.txt").read_text(encoding="utf-8")
    ledger.record_result(call, ToolResult(text, meta={"kind": "command", "exit_code": 1}))
    assert "_UFuncBinaryResolutionError: ufunc 'add'" in ledger.render()


@pytest.mark.parametrize("text", [
    "=== Testing Error Cases ===\nall 3 cases ok\n",
    "    except ValueError:\n        raise TypeError(msg)\n",
    "Found 0 errors in 3 files\n",
    "test result: ok. 4 passed; 0 failed\n",
    "ok  \texample.com/add\t0.002s\n",
    "For more information about this error, try `rustc --explain E0308`.\n",
])
def test_look_alikes_are_not_errors(text: str) -> None:
    assert error_lines(text) == []
