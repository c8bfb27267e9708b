"""Two scripted sessions over a generated project, for tests and benchmarks that run
the real agent, tools and context engine with a model that follows a script.

    investigate   read-only: list, grep and read 14 modules, then answer (25 calls)
    long-haul     35 calls: read, edit, run failing and passing commands, write a
                  module and its test, then answer

`workspace(root)` writes the project (a small `shop` package, about 1,400 tokens per
module, and `check.py`, which runs its tests without printing timings or the project's
own path, so every run prints the same wherever it runs); `SCENARIOS[name]` holds the
task and the steps. The sizes make the investigation about as large as the one issue 12
describes (its prompt reaches about 28,500 tokens when nothing is compacted). A step is
what the model says and the one tool it calls; the script does not depend on what the
tools answer, so the same run can be replayed against any window, provider or server
double.
Edits name text that exists in the generated files, and every file is read before it
is edited (the tools insist).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODULES = ("pricing", "orders", "catalog", "stock", "shipping", "taxes", "invoices",
           "customers", "payments", "returns", "reports", "coupons", "audit", "search")
FUNCTIONS_PER_MODULE = 9


@dataclass(frozen=True)
class Step:
    say: str
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    task: str
    steps: tuple[Step, ...]
    answer: str


def _function(module: str, index: int) -> str:
    name = f"{module}_component_{index}"
    return (
        f"def {name}(order, rate=Decimal(\"0.{index + 1:02d}\")):\n"
        f"    \"\"\"The {module} component {index} of an order, rounded to cents.\n\n"
        f"    Orders below {index * 10} units of value pay nothing; above that the rate\n"
        f"    applies to the subtotal of every line that is not a gift card.\n"
        f"    \"\"\"\n"
        f"    subtotal = sum((line.price * line.quantity for line in order.lines\n"
        f"                    if not line.gift_card), Decimal(\"0\"))\n"
        f"    if subtotal <= {index * 10}:\n"
        f"        return Decimal(\"0.00\")\n"
        f"    value = subtotal * rate\n"
        f"    log.debug(\"{name}: subtotal=%s value=%s\", subtotal, value)\n"
        f"    return value.quantize(CENT, rounding=ROUND_HALF_UP)\n"
    )


PRICING_EXTRA = '''

def apply_discount(total, percent):
    """Take `percent` off `total`."""
    return total - total * percent / 100


def order_total(order, percent=0):
    """The amount to charge: line subtotal minus the discount, plus taxes."""
    subtotal = sum(line.price * line.quantity for line in order.lines)
    return apply_discount(subtotal, percent) + taxes_component_1(order)
'''


def module_text(module: str) -> str:
    head = (f'"""The {module} rules of the shop (generated for benchmarks)."""\n\n'
            "import logging\nfrom decimal import ROUND_HALF_UP, Decimal\n\n")
    if module == "pricing":
        head += "from shop.taxes import taxes_component_1\n\n"
    head += 'CENT = Decimal("0.01")\nlog = logging.getLogger(__name__)\n\n\n'
    body = "\n\n".join(_function(module, i) for i in range(FUNCTIONS_PER_MODULE))
    return head + body + (PRICING_EXTRA if module == "pricing" else "")


TEST_PRICING = '''import unittest
from decimal import Decimal

from shop.pricing import apply_discount


class DiscountTest(unittest.TestCase):
    def test_fifteen_percent_of_ten(self):
        self.assertEqual(apply_discount(Decimal("10.00"), 15), Decimal("8.50"))

    def test_rounds_to_cents(self):
        self.assertEqual(apply_discount(Decimal("9.99"), 33), Decimal("6.69"))


if __name__ == "__main__":
    unittest.main()
'''


CHECK = '''"""Run the tests; print what failed and a count (no timings, and paths relative
to the project: the output is the same wherever and whenever it runs)."""
import os
import sys
import unittest

result = unittest.TestResult()
unittest.defaultTestLoader.discover("tests").run(result)
for test, trace in result.failures + result.errors:
    print(f"FAIL: {test.id()}")
    print(trace.replace(os.getcwd() + os.sep, ""))
print(f"{result.testsRun} tests, {len(result.failures)} failures, {len(result.errors)} errors")
sys.exit(1 if result.failures or result.errors else 0)
'''


def workspace(root: Path) -> None:
    """Write the generated project under `root`."""
    package = root / "shop"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""A generated shop."""\n', encoding="utf-8")
    for module in MODULES:
        (package / f"{module}.py").write_text(module_text(module), encoding="utf-8")
    tests = root / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "__init__.py").write_text("", encoding="utf-8")
    (tests / "test_pricing.py").write_text(TEST_PRICING, encoding="utf-8")
    (root / "check.py").write_text(CHECK, encoding="utf-8")
    (root / "README.md").write_text("# shop\n\nRun the tests with `python3 check.py`.\n",
                                    encoding="utf-8")


def _read(path: str, say: str = "", **extra: Any) -> Step:
    return Step(say or f"Reading {path}.", "read_file", {"file_path": path, **extra})


INVESTIGATE_TASK = (
    "Customers report that discounted orders are charged a cent more or less than the "
    "invoice shows. Find where totals, discounts and taxes are computed in shop/, and "
    "explain the cause with file names and function names. Do not change any file."
)

INVESTIGATE = Scenario(
    "investigate", INVESTIGATE_TASK,
    (
        Step("Let me look at the project layout.", "list_files", {"path": "."}),
        Step("", "list_files", {"path": "shop"}),
        Step("Where is the total computed?", "grep", {"pattern": "def order_total"}),
        _read("shop/pricing.py"),
        Step("", "grep", {"pattern": "apply_discount", "path": "shop"}),
        _read("shop/taxes.py"),
        _read("shop/orders.py"),
        Step("", "grep", {"pattern": "quantize", "path": "shop/invoices.py"}),
        _read("shop/invoices.py"),
        _read("shop/coupons.py"),
        _read("shop/payments.py"),
        Step("", "grep", {"pattern": "ROUND_HALF_UP", "path": "shop"}),
        _read("shop/returns.py"),
        _read("shop/reports.py"),
        _read("shop/shipping.py"),
        _read("tests/test_pricing.py"),
        _read("shop/customers.py"),
        _read("shop/audit.py"),
        Step("", "grep", {"pattern": "percent", "path": "shop"}),
        _read("shop/catalog.py"),
        _read("shop/stock.py"),
        _read("shop/search.py"),
        Step("", "grep", {"pattern": "gift_card", "path": "shop/pricing.py"}),
        _read("shop/pricing.py", "Back to pricing for the discount lines.", offset=95,
              limit=40),
        Step("", "think", {"thought": "apply_discount works on floats-as-Decimal without "
                                      "quantize; invoices quantize every component."}),
    ),
    "The cause is shop/pricing.py: apply_discount() subtracts `total * percent / 100` "
    "without rounding to cents, while every component in shop/invoices.py and "
    "shop/taxes.py is quantized with ROUND_HALF_UP, so order_total() and the invoice "
    "differ by up to a cent on discounted orders.",
)

LONG_HAUL_TASK = (
    "Discounted orders are charged a cent off from the invoice. Fix apply_discount in "
    "shop/pricing.py so it rounds to cents with ROUND_HALF_UP, make the tests in "
    "tests/test_pricing.py pass, then add shop/loyalty.py with a points_for(order) "
    "function (one point per whole unit spent) and a test for it."
)
RUN_TESTS = "python3 check.py"
FIXED = ("    value = total - total * Decimal(percent) / 100\n"
         "    return value.quantize(CENT, rounding=ROUND_HALF_UP)")
LOYALTY = '''"""Loyalty points."""

from decimal import Decimal


def points_for(order):
    """One point per whole unit of value spent on the order."""
    spent = sum((line.price * line.quantity for line in order.lines), Decimal("0"))
    return int(spent)
'''
TEST_LOYALTY = '''import unittest
from decimal import Decimal
from types import SimpleNamespace as NS

from shop.loyalty import points_for


class PointsTest(unittest.TestCase):
    def test_whole_units(self):
        order = NS(lines=[NS(price=Decimal("3.75"), quantity=2)])
        self.assertEqual(points_for(order), 7)


if __name__ == "__main__":
    unittest.main()
'''

LONG_HAUL = Scenario(
    "long-haul", LONG_HAUL_TASK,
    (
        Step("Layout first.", "list_files", {"path": "."}),
        Step("", "run_command", {"command": RUN_TESTS}),
        _read("tests/test_pricing.py"),
        _read("shop/pricing.py"),
        Step("", "grep", {"pattern": "def apply_discount|def order_total", "path": "shop"}),
        _read("shop/taxes.py"),
        _read("shop/invoices.py"),
        Step("", "run_command", {"command": "python3 -c \"from decimal import Decimal; "
                                 "from shop.pricing import apply_discount; "
                                 "print(apply_discount(Decimal('9.99'), 33))\""}),
        Step("Rounding is missing; fixing it.", "edit_file", {
            "file_path": "shop/pricing.py",
            "old_string": "    return total - total * percent / 100",
            "new_string": FIXED}),
        Step("", "run_command", {"command": RUN_TESTS}),
        _read("shop/orders.py"),
        _read("shop/coupons.py"),
        Step("", "grep", {"pattern": "apply_discount", "path": "."}),
        _read("shop/payments.py"),
        _read("shop/returns.py"),
        Step("", "run_command", {"command": "python3 -c \"import shop.returns, "
                                 "shop.payments; print(shop.returns.CENT)\""}),
        _read("shop/customers.py"),
        Step("", "todo", {"action": "add", "text": "add shop/loyalty.py with points_for"}),
        Step("", "todo", {"action": "add", "text": "test points_for"}),
        Step("", "write_file", {"file_path": "shop/loyalty.py", "content": LOYALTY}),
        Step("", "write_file", {"file_path": "tests/test_loyalty.py",
                                "content": TEST_LOYALTY.replace("), 7)", "), 8)")}),
        Step("", "run_command", {"command": RUN_TESTS}),
        _read("tests/test_loyalty.py"),
        Step("The expected value is wrong: 3.75 * 2 is 7.5.", "edit_file", {
            "file_path": "tests/test_loyalty.py",
            "old_string": "self.assertEqual(points_for(order), 8)",
            "new_string": "self.assertEqual(points_for(order), 7)"}),
        Step("", "run_command", {"command": RUN_TESTS}),
        Step("", "todo", {"action": "done", "id": 1}),
        Step("", "todo", {"action": "done", "id": 2}),
        _read("shop/reports.py"),
        _read("shop/audit.py"),
        Step("", "grep", {"pattern": "points", "path": "shop"}),
        _read("shop/shipping.py"),
        _read("shop/stock.py"),
        Step("", "run_command", {"command": "python3 check.py && ls tests"}),
        Step("", "run_command", {"command": "git status --short || ls shop tests"}),
        Step("", "run_command", {"command": "python3 -c \"import shop.loyalty as l; "
                                 "print(l.points_for.__doc__)\""}),
    ),
    "Fixed apply_discount in shop/pricing.py to round with ROUND_HALF_UP, added "
    "shop/loyalty.py with points_for(order) and tests/test_loyalty.py; all tests pass.",
)

SCENARIOS = {s.name: s for s in (INVESTIGATE, LONG_HAUL)}
