"""Tests of billing/statements.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import statements


class StatementsTests(unittest.TestCase):
    def test_average_statement_period(self) -> None:
        self.assertEqual(statements.average_statement_period([]), 0.0)
        self.assertEqual(statements.average_statement_period([2.0, 4.0]), 3.0)

    def test_checked_statement_balance(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                statements.checked_statement_balance(bad)
        self.assertEqual(statements.checked_statement_balance(2), 2)

    def test_format_statement_rows(self) -> None:
        self.assertEqual(statements.format_statement_rows(2026, 7), "SR-2026-0007")

    def test_unique_statement_code(self) -> None:
        self.assertEqual(statements.unique_statement_code([3, 1, 3]), [3, 1])

    def test_parse_statement_id(self) -> None:
        self.assertEqual(statements.parse_statement_id("a = b=c"), ("a", "b=c"))
