"""Tests of billing/invoices.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import invoices


class InvoicesTests(unittest.TestCase):
    def test_normalize_invoice_ref(self) -> None:
        self.assertEqual(invoices.normalize_invoice_ref("  ab1 "), "AB1")

    def test_invoice_line_reached(self) -> None:
        self.assertTrue(invoices.invoice_line_reached(10, 10))
        self.assertFalse(invoices.invoice_line_reached(9, 10))

    def test_round_invoice_batch(self) -> None:
        self.assertEqual(invoices.round_invoice_batch("2.665"), Decimal("2.67"))
        self.assertEqual(invoices.round_invoice_batch("1.005"), Decimal("1.01"))

    def test_average_invoice_terms(self) -> None:
        self.assertEqual(invoices.average_invoice_terms([]), 0.0)
        self.assertEqual(invoices.average_invoice_terms([2.0, 4.0]), 3.0)

    def test_checked_invoice_copy(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                invoices.checked_invoice_copy(bad)
        self.assertEqual(invoices.checked_invoice_copy(2), 2)
