"""Tests of rota/overtime.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import overtime


class OvertimeTests(unittest.TestCase):
    def test_checked_overtime_band(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                overtime.checked_overtime_band(bad)
        self.assertEqual(overtime.checked_overtime_band(2), 2)

    def test_format_overtime_rate(self) -> None:
        self.assertEqual(overtime.format_overtime_rate(2026, 7), "OR-2026-0007")

    def test_unique_overtime_cap(self) -> None:
        self.assertEqual(overtime.unique_overtime_cap([3, 1, 3]), [3, 1])

    def test_parse_overtime_weeks(self) -> None:
        self.assertEqual(overtime.parse_overtime_weeks("a = b=c"), ("a", "b=c"))

    def test_normalize_overtime_rule(self) -> None:
        self.assertEqual(overtime.normalize_overtime_rule("  ab1 "), "AB1")
