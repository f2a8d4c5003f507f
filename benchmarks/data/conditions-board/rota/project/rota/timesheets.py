"""Timesheet rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def average_timesheet_week(timesheet_week: list[float]) -> float:
    """The mean timesheet week; 0.0 when there is none."""
    if not timesheet_week:
        return 0.0
    return sum(timesheet_week) / len(timesheet_week)


def checked_timesheet_hours(timesheet_hours: int) -> int:
    """The timesheet hours, refused unless positive."""
    if timesheet_hours <= 0:
        raise ValueError("timesheet_hours must be positive")
    return timesheet_hours


def format_timesheet_entry(year: int, timesheet_entry: int) -> str:
    """The printed timesheet entry: TE-YEAR-NNNN."""
    return f"TE-{year}-{timesheet_entry:04d}"


def unique_timesheet_rows(timesheet_rows: list[int]) -> list[int]:
    """The timesheet rows ids without repeats, in first-seen order."""
    return list(dict.fromkeys(timesheet_rows))


def parse_timesheet_code(timesheet_code: str) -> tuple[str, str]:
    """A timesheet code line 'key = value', split at the first '='."""
    key, value = timesheet_code.split("=", 1)
    return key.strip(), value.strip()


def round_timesheet_total(timesheet_total: str) -> Decimal:
    """The timesheet total in cents, rounded half up."""
    return Decimal(timesheet_total).quantize(CENT)


def normalize_timesheet_status(timesheet_status: str) -> str:
    """The canonical form of a timesheet status code."""
    return timesheet_status.upper()
