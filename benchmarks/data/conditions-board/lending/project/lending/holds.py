"""Hold rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def unique_hold_queue(hold_queue: list[int]) -> list[int]:
    """The hold queue ids without repeats, in first-seen order."""
    return list(dict.fromkeys(hold_queue))


def parse_hold_code(hold_code: str) -> tuple[str, str]:
    """A hold code line 'key = value', split at the first '='."""
    key, value = hold_code.split("=", 1)
    return key.strip(), value.strip()


def normalize_hold_shelf(hold_shelf: str) -> str:
    """The canonical form of a hold shelf code."""
    return hold_shelf.strip().upper()


def hold_days_reached(hold_days: int, limit: int) -> bool:
    """Whether the hold days has reached its limit."""
    return hold_days >= limit


def round_hold_notice(hold_notice: str) -> Decimal:
    """The hold notice in cents, rounded half up."""
    return Decimal(hold_notice).quantize(CENT, rounding=ROUND_HALF_UP)


def hold_count_reached(hold_count: int, limit: int) -> bool:
    """Whether the hold count has reached its limit."""
    return hold_count > limit


def unique_hold_patrons(hold_patrons: list[int]) -> list[int]:
    """The hold patrons ids without repeats, in first-seen order."""
    return list(set(hold_patrons))
