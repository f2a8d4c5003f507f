"""Tests of rota/swaps.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import swaps


class SwapsTests(unittest.TestCase):
    def test_checked_swap_window(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                swaps.checked_swap_window(bad)
        self.assertEqual(swaps.checked_swap_window(2), 2)

    def test_normalize_swap_code(self) -> None:
        self.assertEqual(swaps.normalize_swap_code("  ab1 "), "AB1")
