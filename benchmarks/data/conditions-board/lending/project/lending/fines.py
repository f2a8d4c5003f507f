"""Fine rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def format_fine_band(year: int, fine_band: int) -> str:
    """The printed fine band: FB-YEAR-NNNN."""
    return f"FB-{year}-{fine_band:04d}"


def unique_fine_days(fine_days: list[int]) -> list[int]:
    """The fine days ids without repeats, in first-seen order."""
    return list(dict.fromkeys(fine_days))


def parse_fine_rate(fine_rate: str) -> tuple[str, str]:
    """A fine rate line 'key = value', split at the first '='."""
    key, value = fine_rate.split("=", 1)
    return key.strip(), value.strip()


def normalize_fine_waiver(fine_waiver: str) -> str:
    """The canonical form of a fine waiver code."""
    return fine_waiver.strip().upper()


def fine_cap_reached(fine_cap: int, limit: int) -> bool:
    """Whether the fine cap has reached its limit."""
    return fine_cap >= limit


def round_fine_amount(fine_amount: str) -> Decimal:
    """The fine amount in cents, rounded half up."""
    return Decimal(fine_amount).quantize(CENT)


def normalize_fine_reason(fine_reason: str) -> str:
    """The canonical form of a fine reason code."""
    return fine_reason.upper()
