"""Tests of rota/on_call.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import on_call


class OnCallTests(unittest.TestCase):
    def test_call_outs_reached(self) -> None:
        self.assertTrue(on_call.call_outs_reached(10, 10))
        self.assertFalse(on_call.call_outs_reached(9, 10))

    def test_average_call_minutes(self) -> None:
        self.assertEqual(on_call.average_call_minutes([]), 0.0)
        self.assertEqual(on_call.average_call_minutes([2.0, 4.0]), 3.0)
