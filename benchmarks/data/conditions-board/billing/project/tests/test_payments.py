"""Tests of billing/payments.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import payments


class PaymentsTests(unittest.TestCase):
    def test_payer_code_reached(self) -> None:
        self.assertTrue(payments.payer_code_reached(10, 10))
        self.assertFalse(payments.payer_code_reached(9, 10))

    def test_round_payment_run(self) -> None:
        self.assertEqual(payments.round_payment_run("2.665"), Decimal("2.67"))
        self.assertEqual(payments.round_payment_run("1.005"), Decimal("1.01"))

    def test_average_payment_amount(self) -> None:
        self.assertEqual(payments.average_payment_amount([]), 0.0)
        self.assertEqual(payments.average_payment_amount([2.0, 4.0]), 3.0)

    def test_checked_payment_share(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                payments.checked_payment_share(bad)
        self.assertEqual(payments.checked_payment_share(2), 2)

    def test_format_payment_batch(self) -> None:
        self.assertEqual(payments.format_payment_batch(2026, 7), "PB-2026-0007")
