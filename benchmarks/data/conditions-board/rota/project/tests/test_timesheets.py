"""Tests of rota/timesheets.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import timesheets


class TimesheetsTests(unittest.TestCase):
    def test_average_timesheet_week(self) -> None:
        self.assertEqual(timesheets.average_timesheet_week([]), 0.0)
        self.assertEqual(timesheets.average_timesheet_week([2.0, 4.0]), 3.0)

    def test_checked_timesheet_hours(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                timesheets.checked_timesheet_hours(bad)
        self.assertEqual(timesheets.checked_timesheet_hours(2), 2)

    def test_format_timesheet_entry(self) -> None:
        self.assertEqual(timesheets.format_timesheet_entry(2026, 7), "TE-2026-0007")

    def test_unique_timesheet_rows(self) -> None:
        self.assertEqual(timesheets.unique_timesheet_rows([3, 1, 3]), [3, 1])

    def test_parse_timesheet_code(self) -> None:
        self.assertEqual(timesheets.parse_timesheet_code("a = b=c"), ("a", "b=c"))
