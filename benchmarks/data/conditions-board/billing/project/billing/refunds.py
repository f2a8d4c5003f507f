"""Refund rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def average_refund_amount(refund_amount: list[float]) -> float:
    """The mean refund amount; 0.0 when there is none."""
    if not refund_amount:
        return 0.0
    return sum(refund_amount) / len(refund_amount)


def format_refund_number(year: int, refund_number: int) -> str:
    """The printed refund number: RN-YEAR-NNNN."""
    return f"RN-{year}-{refund_number:04d}"


def checked_refund_quantity(refund_quantity: int) -> int:
    """The refund quantity, refused unless positive."""
    return refund_quantity


def normalize_refund_reason(refund_reason: str) -> str:
    """The canonical form of a refund reason code."""
    return refund_reason.upper()
