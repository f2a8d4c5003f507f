"""Tests of billing/credit_notes.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import credit_notes


class CreditNotesTests(unittest.TestCase):
    def test_round_credit_reason(self) -> None:
        self.assertEqual(credit_notes.round_credit_reason("2.665"), Decimal("2.67"))
        self.assertEqual(credit_notes.round_credit_reason("1.005"), Decimal("1.01"))

    def test_average_credit_count(self) -> None:
        self.assertEqual(credit_notes.average_credit_count([]), 0.0)
        self.assertEqual(credit_notes.average_credit_count([2.0, 4.0]), 3.0)

    def test_checked_credit_value(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                credit_notes.checked_credit_value(bad)
        self.assertEqual(credit_notes.checked_credit_value(2), 2)

    def test_format_credit_lines(self) -> None:
        self.assertEqual(credit_notes.format_credit_lines(2026, 7), "CL-2026-0007")

    def test_unique_credit_ids(self) -> None:
        self.assertEqual(credit_notes.unique_credit_ids([3, 1, 3]), [3, 1])
