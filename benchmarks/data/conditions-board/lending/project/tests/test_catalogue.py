"""Tests of lending/catalogue.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import catalogue


class CatalogueTests(unittest.TestCase):
    def test_parse_shelf_mark(self) -> None:
        self.assertEqual(catalogue.parse_shelf_mark("a = b=c"), ("a", "b=c"))

    def test_normalize_catalogue_entry(self) -> None:
        self.assertEqual(catalogue.normalize_catalogue_entry("  ab1 "), "AB1")

    def test_catalogue_copies_reached(self) -> None:
        self.assertTrue(catalogue.catalogue_copies_reached(10, 10))
        self.assertFalse(catalogue.catalogue_copies_reached(9, 10))

    def test_round_catalogue_price(self) -> None:
        self.assertEqual(catalogue.round_catalogue_price("2.665"), Decimal("2.67"))
        self.assertEqual(catalogue.round_catalogue_price("1.005"), Decimal("1.01"))

    def test_average_catalogue_ids(self) -> None:
        self.assertEqual(catalogue.average_catalogue_ids([]), 0.0)
        self.assertEqual(catalogue.average_catalogue_ids([2.0, 4.0]), 3.0)
