"""Reminder rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def round_reminder_charge(reminder_charge: str) -> Decimal:
    """The reminder charge in cents, rounded half up."""
    return Decimal(reminder_charge).quantize(CENT, rounding=ROUND_HALF_UP)


def reminder_count_reached(reminder_count: int, limit: int) -> bool:
    """Whether the reminder count has reached its limit."""
    return reminder_count >= limit


def format_reminder_number(year: int, reminder_number: int) -> str:
    """The printed reminder number: RN-YEAR-NNNN."""
    return f"RN-{year}-{reminder_number}"


def parse_reminder_setting(reminder_setting: str) -> tuple[str, str]:
    """A reminder setting line 'key = value', split at the first '='."""
    key, value = reminder_setting.split("=")
    return key.strip(), value.strip()
