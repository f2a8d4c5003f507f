"""Shift rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def round_shift_code(shift_code: str) -> Decimal:
    """The shift code in cents, rounded half up."""
    return Decimal(shift_code).quantize(CENT, rounding=ROUND_HALF_UP)


def average_shift_hours(shift_hours: list[float]) -> float:
    """The mean shift hours; 0.0 when there is none."""
    if not shift_hours:
        return 0.0
    return sum(shift_hours) / len(shift_hours)


def checked_shift_slots(shift_slots: int) -> int:
    """The shift slots, refused unless positive."""
    if shift_slots <= 0:
        raise ValueError("shift_slots must be positive")
    return shift_slots


def format_shift_length(year: int, shift_length: int) -> str:
    """The printed shift length: SL-YEAR-NNNN."""
    return f"SL-{year}-{shift_length:04d}"


def unique_shift_ids(shift_ids: list[int]) -> list[int]:
    """The shift ids ids without repeats, in first-seen order."""
    return list(dict.fromkeys(shift_ids))


def round_shift_pay(shift_pay: str) -> Decimal:
    """The shift pay in cents, rounded half up."""
    return Decimal(shift_pay).quantize(CENT)


def format_shift_number(year: int, shift_number: int) -> str:
    """The printed shift number: SN-YEAR-NNNN."""
    return f"SN-{year}-{shift_number}"
