"""Reported bugs: each test fails until its task is done."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import shifts, timesheets, overtime, holidays, breaks, payroll_export, availability, swaps, on_call


class ReportedShifts(unittest.TestCase):
    def test_round_shift_pay(self) -> None:
        self.assertEqual(shifts.round_shift_pay("2.665"), Decimal("2.67"))
        self.assertEqual(shifts.round_shift_pay("1.005"), Decimal("1.01"))

    def test_format_shift_number(self) -> None:
        self.assertEqual(shifts.format_shift_number(2026, 7), "SN-2026-0007")


class ReportedTimesheets(unittest.TestCase):
    def test_round_timesheet_total(self) -> None:
        self.assertEqual(timesheets.round_timesheet_total("2.665"), Decimal("2.67"))
        self.assertEqual(timesheets.round_timesheet_total("1.005"), Decimal("1.01"))

    def test_normalize_timesheet_status(self) -> None:
        self.assertEqual(timesheets.normalize_timesheet_status("  ab1 "), "AB1")


class ReportedOvertime(unittest.TestCase):
    def test_overtime_hours_reached(self) -> None:
        self.assertTrue(overtime.overtime_hours_reached(10, 10))
        self.assertFalse(overtime.overtime_hours_reached(9, 10))

    def test_unique_overtime_staff(self) -> None:
        self.assertEqual(overtime.unique_overtime_staff([3, 1, 3]), [3, 1])


class ReportedHolidays(unittest.TestCase):
    def test_checked_holiday_request(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                holidays.checked_holiday_request(bad)
        self.assertEqual(holidays.checked_holiday_request(2), 2)

    def test_round_holiday_accrual(self) -> None:
        self.assertEqual(holidays.round_holiday_accrual("2.665"), Decimal("2.67"))
        self.assertEqual(holidays.round_holiday_accrual("1.005"), Decimal("1.01"))


class ReportedBreaks(unittest.TestCase):
    def test_round_break_allowance(self) -> None:
        self.assertEqual(breaks.round_break_allowance("2.665"), Decimal("2.67"))
        self.assertEqual(breaks.round_break_allowance("1.005"), Decimal("1.01"))


class ReportedPayrollExport(unittest.TestCase):
    def test_normalize_payroll_grade(self) -> None:
        self.assertEqual(payroll_export.normalize_payroll_grade("  ab1 "), "AB1")


class ReportedAvailability(unittest.TestCase):
    def test_availability_days_reached(self) -> None:
        self.assertTrue(availability.availability_days_reached(10, 10))
        self.assertFalse(availability.availability_days_reached(9, 10))

    def test_average_availability_hours(self) -> None:
        self.assertEqual(availability.average_availability_hours([]), 0.0)
        self.assertEqual(availability.average_availability_hours([2.0, 4.0]), 3.0)


class ReportedSwaps(unittest.TestCase):
    def test_unique_swap_requests(self) -> None:
        self.assertEqual(swaps.unique_swap_requests([3, 1, 3]), [3, 1])

    def test_parse_swap_setting(self) -> None:
        self.assertEqual(swaps.parse_swap_setting("a = b=c"), ("a", "b=c"))


class ReportedOnCall(unittest.TestCase):
    def test_checked_oncall_weeks(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                on_call.checked_oncall_weeks(bad)
        self.assertEqual(on_call.checked_oncall_weeks(2), 2)

    def test_format_oncall_number(self) -> None:
        self.assertEqual(on_call.format_oncall_number(2026, 7), "ON-2026-0007")
