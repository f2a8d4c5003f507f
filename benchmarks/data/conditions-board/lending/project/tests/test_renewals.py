"""Tests of lending/renewals.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import renewals


class RenewalsTests(unittest.TestCase):
    def test_renewal_count_reached(self) -> None:
        self.assertTrue(renewals.renewal_count_reached(10, 10))
        self.assertFalse(renewals.renewal_count_reached(9, 10))

    def test_round_renewal_period(self) -> None:
        self.assertEqual(renewals.round_renewal_period("2.665"), Decimal("2.67"))
        self.assertEqual(renewals.round_renewal_period("1.005"), Decimal("1.01"))

    def test_average_renewal_fee(self) -> None:
        self.assertEqual(renewals.average_renewal_fee([]), 0.0)
        self.assertEqual(renewals.average_renewal_fee([2.0, 4.0]), 3.0)

    def test_checked_renewal_rule(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                renewals.checked_renewal_rule(bad)
        self.assertEqual(renewals.checked_renewal_rule(2), 2)

    def test_format_renewal_ids(self) -> None:
        self.assertEqual(renewals.format_renewal_ids(2026, 7), "RI-2026-0007")
