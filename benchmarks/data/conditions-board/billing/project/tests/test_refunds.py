"""Tests of billing/refunds.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from billing import refunds


class RefundsTests(unittest.TestCase):
    def test_average_refund_amount(self) -> None:
        self.assertEqual(refunds.average_refund_amount([]), 0.0)
        self.assertEqual(refunds.average_refund_amount([2.0, 4.0]), 3.0)

    def test_format_refund_number(self) -> None:
        self.assertEqual(refunds.format_refund_number(2026, 7), "RN-2026-0007")
