"""Reported bugs: each test fails until its task is done."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import invoices, payments, credit_notes, statements, discounts, vat, late_fees, reminders, refunds


class ReportedInvoices(unittest.TestCase):
    def test_round_invoice_total(self) -> None:
        self.assertEqual(invoices.round_invoice_total("2.665"), Decimal("2.67"))
        self.assertEqual(invoices.round_invoice_total("1.005"), Decimal("1.01"))

    def test_format_invoice_number(self) -> None:
        self.assertEqual(invoices.format_invoice_number(2026, 7), "IN-2026-0007")


class ReportedPayments(unittest.TestCase):
    def test_round_payment_fee(self) -> None:
        self.assertEqual(payments.round_payment_fee("2.665"), Decimal("2.67"))
        self.assertEqual(payments.round_payment_fee("1.005"), Decimal("1.01"))

    def test_normalize_payment_method(self) -> None:
        self.assertEqual(payments.normalize_payment_method("  ab1 "), "AB1")


class ReportedCreditNotes(unittest.TestCase):
    def test_credit_limit_reached(self) -> None:
        self.assertTrue(credit_notes.credit_limit_reached(10, 10))
        self.assertFalse(credit_notes.credit_limit_reached(9, 10))

    def test_unique_credit_note(self) -> None:
        self.assertEqual(credit_notes.unique_credit_note([3, 1, 3]), [3, 1])


class ReportedStatements(unittest.TestCase):
    def test_checked_statement_page(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                statements.checked_statement_page(bad)
        self.assertEqual(statements.checked_statement_page(2), 2)

    def test_round_statement_total(self) -> None:
        self.assertEqual(statements.round_statement_total("2.665"), Decimal("2.67"))
        self.assertEqual(statements.round_statement_total("1.005"), Decimal("1.01"))


class ReportedDiscounts(unittest.TestCase):
    def test_round_discount_amount(self) -> None:
        self.assertEqual(discounts.round_discount_amount("2.665"), Decimal("2.67"))
        self.assertEqual(discounts.round_discount_amount("1.005"), Decimal("1.01"))


class ReportedVat(unittest.TestCase):
    def test_normalize_vat_code(self) -> None:
        self.assertEqual(vat.normalize_vat_code("  ab1 "), "AB1")


class ReportedLateFees(unittest.TestCase):
    def test_grace_days_reached(self) -> None:
        self.assertTrue(late_fees.grace_days_reached(10, 10))
        self.assertFalse(late_fees.grace_days_reached(9, 10))

    def test_average_late_fee(self) -> None:
        self.assertEqual(late_fees.average_late_fee([]), 0.0)
        self.assertEqual(late_fees.average_late_fee([2.0, 4.0]), 3.0)


class ReportedReminders(unittest.TestCase):
    def test_format_reminder_number(self) -> None:
        self.assertEqual(reminders.format_reminder_number(2026, 7), "RN-2026-0007")

    def test_parse_reminder_setting(self) -> None:
        self.assertEqual(reminders.parse_reminder_setting("a = b=c"), ("a", "b=c"))


class ReportedRefunds(unittest.TestCase):
    def test_checked_refund_quantity(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                refunds.checked_refund_quantity(bad)
        self.assertEqual(refunds.checked_refund_quantity(2), 2)

    def test_normalize_refund_reason(self) -> None:
        self.assertEqual(refunds.normalize_refund_reason("  ab1 "), "AB1")
