"""Tests of billing/reminders.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import reminders


class RemindersTests(unittest.TestCase):
    def test_round_reminder_charge(self) -> None:
        self.assertEqual(reminders.round_reminder_charge("2.665"), Decimal("2.67"))
        self.assertEqual(reminders.round_reminder_charge("1.005"), Decimal("1.01"))

    def test_reminder_count_reached(self) -> None:
        self.assertTrue(reminders.reminder_count_reached(10, 10))
        self.assertFalse(reminders.reminder_count_reached(9, 10))
