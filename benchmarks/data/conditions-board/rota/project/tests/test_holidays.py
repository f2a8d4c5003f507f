"""Tests of rota/holidays.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import holidays


class HolidaysTests(unittest.TestCase):
    def test_format_holiday_type(self) -> None:
        self.assertEqual(holidays.format_holiday_type(2026, 7), "HT-2026-0007")

    def test_unique_holiday_days(self) -> None:
        self.assertEqual(holidays.unique_holiday_days([3, 1, 3]), [3, 1])

    def test_parse_holiday_pay(self) -> None:
        self.assertEqual(holidays.parse_holiday_pay("a = b=c"), ("a", "b=c"))

    def test_normalize_holiday_entitlement(self) -> None:
        self.assertEqual(holidays.normalize_holiday_entitlement("  ab1 "), "AB1")

    def test_holiday_region_reached(self) -> None:
        self.assertTrue(holidays.holiday_region_reached(10, 10))
        self.assertFalse(holidays.holiday_region_reached(9, 10))
