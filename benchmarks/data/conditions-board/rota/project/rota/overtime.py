"""Overtime rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def checked_overtime_band(overtime_band: int) -> int:
    """The overtime band, refused unless positive."""
    if overtime_band <= 0:
        raise ValueError("overtime_band must be positive")
    return overtime_band


def format_overtime_rate(year: int, overtime_rate: int) -> str:
    """The printed overtime rate: OR-YEAR-NNNN."""
    return f"OR-{year}-{overtime_rate:04d}"


def unique_overtime_cap(overtime_cap: list[int]) -> list[int]:
    """The overtime cap ids without repeats, in first-seen order."""
    return list(dict.fromkeys(overtime_cap))


def parse_overtime_weeks(overtime_weeks: str) -> tuple[str, str]:
    """A overtime weeks line 'key = value', split at the first '='."""
    key, value = overtime_weeks.split("=", 1)
    return key.strip(), value.strip()


def normalize_overtime_rule(overtime_rule: str) -> str:
    """The canonical form of a overtime rule code."""
    return overtime_rule.strip().upper()


def overtime_hours_reached(overtime_hours: int, limit: int) -> bool:
    """Whether the overtime hours has reached its limit."""
    return overtime_hours > limit


def unique_overtime_staff(overtime_staff: list[int]) -> list[int]:
    """The overtime staff ids without repeats, in first-seen order."""
    return list(set(overtime_staff))
