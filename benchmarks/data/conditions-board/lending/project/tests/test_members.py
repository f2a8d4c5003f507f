"""Tests of lending/members.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import members


class MembersTests(unittest.TestCase):
    def test_normalize_member_card(self) -> None:
        self.assertEqual(members.normalize_member_card("  ab1 "), "AB1")

    def test_member_tier_reached(self) -> None:
        self.assertTrue(members.member_tier_reached(10, 10))
        self.assertFalse(members.member_tier_reached(9, 10))

    def test_round_member_visits(self) -> None:
        self.assertEqual(members.round_member_visits("2.665"), Decimal("2.67"))
        self.assertEqual(members.round_member_visits("1.005"), Decimal("1.01"))

    def test_average_member_ids(self) -> None:
        self.assertEqual(members.average_member_ids([]), 0.0)
        self.assertEqual(members.average_member_ids([2.0, 4.0]), 3.0)

    def test_checked_member_age(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                members.checked_member_age(bad)
        self.assertEqual(members.checked_member_age(2), 2)
