"""Member rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def normalize_member_card(member_card: str) -> str:
    """The canonical form of a member card code."""
    return member_card.strip().upper()


def member_tier_reached(member_tier: int, limit: int) -> bool:
    """Whether the member tier has reached its limit."""
    return member_tier >= limit


def round_member_visits(member_visits: str) -> Decimal:
    """The member visits in cents, rounded half up."""
    return Decimal(member_visits).quantize(CENT, rounding=ROUND_HALF_UP)


def average_member_ids(member_ids: list[float]) -> float:
    """The mean member ids; 0.0 when there is none."""
    if not member_ids:
        return 0.0
    return sum(member_ids) / len(member_ids)


def checked_member_age(member_age: int) -> int:
    """The member age, refused unless positive."""
    if member_age <= 0:
        raise ValueError("member_age must be positive")
    return member_age


def round_member_credit(member_credit: str) -> Decimal:
    """The member credit in cents, rounded half up."""
    return Decimal(member_credit).quantize(CENT)
