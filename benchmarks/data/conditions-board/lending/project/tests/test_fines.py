"""Tests of lending/fines.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import fines


class FinesTests(unittest.TestCase):
    def test_format_fine_band(self) -> None:
        self.assertEqual(fines.format_fine_band(2026, 7), "FB-2026-0007")

    def test_unique_fine_days(self) -> None:
        self.assertEqual(fines.unique_fine_days([3, 1, 3]), [3, 1])

    def test_parse_fine_rate(self) -> None:
        self.assertEqual(fines.parse_fine_rate("a = b=c"), ("a", "b=c"))

    def test_normalize_fine_waiver(self) -> None:
        self.assertEqual(fines.normalize_fine_waiver("  ab1 "), "AB1")

    def test_fine_cap_reached(self) -> None:
        self.assertTrue(fines.fine_cap_reached(10, 10))
        self.assertFalse(fines.fine_cap_reached(9, 10))
