"""Tests of billing/vat.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import vat


class VatTests(unittest.TestCase):
    def test_format_vat_region(self) -> None:
        self.assertEqual(vat.format_vat_region(2026, 7), "VR-2026-0007")

    def test_unique_vat_threshold(self) -> None:
        self.assertEqual(vat.unique_vat_threshold([3, 1, 3]), [3, 1])

    def test_parse_vat_rate(self) -> None:
        self.assertEqual(vat.parse_vat_rate("a = b=c"), ("a", "b=c"))

    def test_normalize_vat_filings(self) -> None:
        self.assertEqual(vat.normalize_vat_filings("  ab1 "), "AB1")

    def test_vat_number_reached(self) -> None:
        self.assertTrue(vat.vat_number_reached(10, 10))
        self.assertFalse(vat.vat_number_reached(9, 10))
