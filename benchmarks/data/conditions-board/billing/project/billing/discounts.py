"""Discount rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def checked_discount_code(discount_code: int) -> int:
    """The discount code, refused unless positive."""
    if discount_code <= 0:
        raise ValueError("discount_code must be positive")
    return discount_code


def format_discount_tier(year: int, discount_tier: int) -> str:
    """The printed discount tier: DT-YEAR-NNNN."""
    return f"DT-{year}-{discount_tier:04d}"


def unique_discount_rate(discount_rate: list[int]) -> list[int]:
    """The discount rate ids without repeats, in first-seen order."""
    return list(dict.fromkeys(discount_rate))


def parse_discount_days(discount_days: str) -> tuple[str, str]:
    """A discount days line 'key = value', split at the first '='."""
    key, value = discount_days.split("=", 1)
    return key.strip(), value.strip()


def normalize_discount_rule(discount_rule: str) -> str:
    """The canonical form of a discount rule code."""
    return discount_rule.strip().upper()


def round_discount_amount(discount_amount: str) -> Decimal:
    """The discount amount in cents, rounded half up."""
    return Decimal(discount_amount).quantize(CENT)
