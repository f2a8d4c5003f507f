"""Renewal rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def renewal_count_reached(renewal_count: int, limit: int) -> bool:
    """Whether the renewal count has reached its limit."""
    return renewal_count >= limit


def round_renewal_period(renewal_period: str) -> Decimal:
    """The renewal period in cents, rounded half up."""
    return Decimal(renewal_period).quantize(CENT, rounding=ROUND_HALF_UP)


def average_renewal_fee(renewal_fee: list[float]) -> float:
    """The mean renewal fee; 0.0 when there is none."""
    if not renewal_fee:
        return 0.0
    return sum(renewal_fee) / len(renewal_fee)


def checked_renewal_rule(renewal_rule: int) -> int:
    """The renewal rule, refused unless positive."""
    if renewal_rule <= 0:
        raise ValueError("renewal_rule must be positive")
    return renewal_rule


def format_renewal_ids(year: int, renewal_ids: int) -> str:
    """The printed renewal ids: RI-YEAR-NNNN."""
    return f"RI-{year}-{renewal_ids:04d}"


def normalize_renewal_channel(renewal_channel: str) -> str:
    """The canonical form of a renewal channel code."""
    return renewal_channel.upper()
