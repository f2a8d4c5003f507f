"""Tests of lending/loans.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import loans


class LoansTests(unittest.TestCase):
    def test_checked_loan_code(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                loans.checked_loan_code(bad)
        self.assertEqual(loans.checked_loan_code(2), 2)

    def test_format_loan_period(self) -> None:
        self.assertEqual(loans.format_loan_period(2026, 7), "LP-2026-0007")

    def test_unique_loan_items(self) -> None:
        self.assertEqual(loans.unique_loan_items([3, 1, 3]), [3, 1])

    def test_parse_loan_limit(self) -> None:
        self.assertEqual(loans.parse_loan_limit("a = b=c"), ("a", "b=c"))

    def test_normalize_loan_ids(self) -> None:
        self.assertEqual(loans.normalize_loan_ids("  ab1 "), "AB1")
