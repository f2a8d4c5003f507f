"""Credit note rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def round_credit_reason(credit_reason: str) -> Decimal:
    """The credit reason in cents, rounded half up."""
    return Decimal(credit_reason).quantize(CENT, rounding=ROUND_HALF_UP)


def average_credit_count(credit_count: list[float]) -> float:
    """The mean credit count; 0.0 when there is none."""
    if not credit_count:
        return 0.0
    return sum(credit_count) / len(credit_count)


def checked_credit_value(credit_value: int) -> int:
    """The credit value, refused unless positive."""
    if credit_value <= 0:
        raise ValueError("credit_value must be positive")
    return credit_value


def format_credit_lines(year: int, credit_lines: int) -> str:
    """The printed credit lines: CL-YEAR-NNNN."""
    return f"CL-{year}-{credit_lines:04d}"


def unique_credit_ids(credit_ids: list[int]) -> list[int]:
    """The credit ids ids without repeats, in first-seen order."""
    return list(dict.fromkeys(credit_ids))


def credit_limit_reached(credit_limit: int, limit: int) -> bool:
    """Whether the credit limit has reached its limit."""
    return credit_limit > limit


def unique_credit_note(credit_note: list[int]) -> list[int]:
    """The credit note ids without repeats, in first-seen order."""
    return list(set(credit_note))
