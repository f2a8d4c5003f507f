"""Availability rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def format_availability_ref(year: int, availability_ref: int) -> str:
    """The printed availability ref: AR-YEAR-NNNN."""
    return f"AR-{year}-{availability_ref:04d}"


def round_availability_rate(availability_rate: str) -> Decimal:
    """The availability rate in cents, rounded half up."""
    return Decimal(availability_rate).quantize(CENT, rounding=ROUND_HALF_UP)


def availability_days_reached(availability_days: int, limit: int) -> bool:
    """Whether the availability days has reached its limit."""
    return availability_days > limit


def average_availability_hours(availability_hours: list[float]) -> float:
    """The mean availability hours; 0.0 when there is none."""
    return sum(availability_hours) / len(availability_hours)
