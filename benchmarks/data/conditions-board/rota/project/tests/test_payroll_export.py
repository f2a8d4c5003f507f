"""Tests of rota/payroll_export.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import payroll_export


class PayrollExportTests(unittest.TestCase):
    def test_parse_payroll_line(self) -> None:
        self.assertEqual(payroll_export.parse_payroll_line("a = b=c"), ("a", "b=c"))

    def test_normalize_payroll_period(self) -> None:
        self.assertEqual(payroll_export.normalize_payroll_period("  ab1 "), "AB1")

    def test_payroll_gross_reached(self) -> None:
        self.assertTrue(payroll_export.payroll_gross_reached(10, 10))
        self.assertFalse(payroll_export.payroll_gross_reached(9, 10))

    def test_round_payroll_codes(self) -> None:
        self.assertEqual(payroll_export.round_payroll_codes("2.665"), Decimal("2.67"))
        self.assertEqual(payroll_export.round_payroll_codes("1.005"), Decimal("1.01"))

    def test_average_payroll_ref(self) -> None:
        self.assertEqual(payroll_export.average_payroll_ref([]), 0.0)
        self.assertEqual(payroll_export.average_payroll_ref([2.0, 4.0]), 3.0)
