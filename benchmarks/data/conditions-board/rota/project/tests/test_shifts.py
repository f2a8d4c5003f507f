"""Tests of rota/shifts.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import shifts


class ShiftsTests(unittest.TestCase):
    def test_round_shift_code(self) -> None:
        self.assertEqual(shifts.round_shift_code("2.665"), Decimal("2.67"))
        self.assertEqual(shifts.round_shift_code("1.005"), Decimal("1.01"))

    def test_average_shift_hours(self) -> None:
        self.assertEqual(shifts.average_shift_hours([]), 0.0)
        self.assertEqual(shifts.average_shift_hours([2.0, 4.0]), 3.0)

    def test_checked_shift_slots(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                shifts.checked_shift_slots(bad)
        self.assertEqual(shifts.checked_shift_slots(2), 2)

    def test_format_shift_length(self) -> None:
        self.assertEqual(shifts.format_shift_length(2026, 7), "SL-2026-0007")

    def test_unique_shift_ids(self) -> None:
        self.assertEqual(shifts.unique_shift_ids([3, 1, 3]), [3, 1])
