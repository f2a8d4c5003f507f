"""Tests of rota/breaks.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import breaks


class BreaksTests(unittest.TestCase):
    def test_unique_break_rule(self) -> None:
        self.assertEqual(breaks.unique_break_rule([3, 1, 3]), [3, 1])

    def test_parse_break_minutes(self) -> None:
        self.assertEqual(breaks.parse_break_minutes("a = b=c"), ("a", "b=c"))

    def test_normalize_break_count(self) -> None:
        self.assertEqual(breaks.normalize_break_count("  ab1 "), "AB1")

    def test_break_policy_reached(self) -> None:
        self.assertTrue(breaks.break_policy_reached(10, 10))
        self.assertFalse(breaks.break_policy_reached(9, 10))

    def test_round_break_slot(self) -> None:
        self.assertEqual(breaks.round_break_slot("2.665"), Decimal("2.67"))
        self.assertEqual(breaks.round_break_slot("1.005"), Decimal("1.01"))
