"""Tests of billing/late_fees.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import late_fees


class LateFeesTests(unittest.TestCase):
    def test_normalize_fee_band(self) -> None:
        self.assertEqual(late_fees.normalize_fee_band("  ab1 "), "AB1")

    def test_unique_fee_ids(self) -> None:
        self.assertEqual(late_fees.unique_fee_ids([3, 1, 3]), [3, 1])
