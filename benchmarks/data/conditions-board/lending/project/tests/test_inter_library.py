"""Tests of lending/inter_library.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import inter_library


class InterLibraryTests(unittest.TestCase):
    def test_round_ill_charge(self) -> None:
        self.assertEqual(inter_library.round_ill_charge("2.665"), Decimal("2.67"))
        self.assertEqual(inter_library.round_ill_charge("1.005"), Decimal("1.01"))

    def test_checked_ill_copies(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                inter_library.checked_ill_copies(bad)
        self.assertEqual(inter_library.checked_ill_copies(2), 2)
