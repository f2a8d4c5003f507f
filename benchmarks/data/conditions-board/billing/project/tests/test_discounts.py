"""Tests of billing/discounts.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import discounts


class DiscountsTests(unittest.TestCase):
    def test_checked_discount_code(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                discounts.checked_discount_code(bad)
        self.assertEqual(discounts.checked_discount_code(2), 2)

    def test_format_discount_tier(self) -> None:
        self.assertEqual(discounts.format_discount_tier(2026, 7), "DT-2026-0007")

    def test_unique_discount_rate(self) -> None:
        self.assertEqual(discounts.unique_discount_rate([3, 1, 3]), [3, 1])

    def test_parse_discount_days(self) -> None:
        self.assertEqual(discounts.parse_discount_days("a = b=c"), ("a", "b=c"))

    def test_normalize_discount_rule(self) -> None:
        self.assertEqual(discounts.normalize_discount_rule("  ab1 "), "AB1")
