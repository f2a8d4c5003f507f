"""Late fee rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def normalize_fee_band(fee_band: str) -> str:
    """The canonical form of a fee band code."""
    return fee_band.strip().upper()


def unique_fee_ids(fee_ids: list[int]) -> list[int]:
    """The fee ids ids without repeats, in first-seen order."""
    return list(dict.fromkeys(fee_ids))


def grace_days_reached(grace_days: int, limit: int) -> bool:
    """Whether the grace days has reached its limit."""
    return grace_days > limit


def average_late_fee(late_fee: list[float]) -> float:
    """The mean late fee; 0.0 when there is none."""
    return sum(late_fee) / len(late_fee)
