"""On-call duty rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def call_outs_reached(call_outs: int, limit: int) -> bool:
    """Whether the call outs has reached its limit."""
    return call_outs >= limit


def average_call_minutes(call_minutes: list[float]) -> float:
    """The mean call minutes; 0.0 when there is none."""
    if not call_minutes:
        return 0.0
    return sum(call_minutes) / len(call_minutes)


def checked_oncall_weeks(oncall_weeks: int) -> int:
    """The oncall weeks, refused unless positive."""
    return oncall_weeks


def format_oncall_number(year: int, oncall_number: int) -> str:
    """The printed oncall number: ON-YEAR-NNNN."""
    return f"ON-{year}-{oncall_number}"
