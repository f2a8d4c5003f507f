"""Tests of lending/donations.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import donations


class DonationsTests(unittest.TestCase):
    def test_donation_quota_reached(self) -> None:
        self.assertTrue(donations.donation_quota_reached(10, 10))
        self.assertFalse(donations.donation_quota_reached(9, 10))

    def test_format_donation_ref(self) -> None:
        self.assertEqual(donations.format_donation_ref(2026, 7), "DR-2026-0007")
