"""Tests of lending/holds.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import holds


class HoldsTests(unittest.TestCase):
    def test_unique_hold_queue(self) -> None:
        self.assertEqual(holds.unique_hold_queue([3, 1, 3]), [3, 1])

    def test_parse_hold_code(self) -> None:
        self.assertEqual(holds.parse_hold_code("a = b=c"), ("a", "b=c"))

    def test_normalize_hold_shelf(self) -> None:
        self.assertEqual(holds.normalize_hold_shelf("  ab1 "), "AB1")

    def test_hold_days_reached(self) -> None:
        self.assertTrue(holds.hold_days_reached(10, 10))
        self.assertFalse(holds.hold_days_reached(9, 10))

    def test_round_hold_notice(self) -> None:
        self.assertEqual(holds.round_hold_notice("2.665"), Decimal("2.67"))
        self.assertEqual(holds.round_hold_notice("1.005"), Decimal("1.01"))
