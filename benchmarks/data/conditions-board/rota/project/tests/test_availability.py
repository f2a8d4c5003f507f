"""Tests of rota/availability.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from rota import availability


class AvailabilityTests(unittest.TestCase):
    def test_format_availability_ref(self) -> None:
        self.assertEqual(availability.format_availability_ref(2026, 7), "AR-2026-0007")

    def test_round_availability_rate(self) -> None:
        self.assertEqual(availability.round_availability_rate("2.665"), Decimal("2.67"))
        self.assertEqual(availability.round_availability_rate("1.005"), Decimal("1.01"))
