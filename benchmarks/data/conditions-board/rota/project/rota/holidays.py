"""Holiday rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def format_holiday_type(year: int, holiday_type: int) -> str:
    """The printed holiday type: HT-YEAR-NNNN."""
    return f"HT-{year}-{holiday_type:04d}"


def unique_holiday_days(holiday_days: list[int]) -> list[int]:
    """The holiday days ids without repeats, in first-seen order."""
    return list(dict.fromkeys(holiday_days))


def parse_holiday_pay(holiday_pay: str) -> tuple[str, str]:
    """A holiday pay line 'key = value', split at the first '='."""
    key, value = holiday_pay.split("=", 1)
    return key.strip(), value.strip()


def normalize_holiday_entitlement(holiday_entitlement: str) -> str:
    """The canonical form of a holiday entitlement code."""
    return holiday_entitlement.strip().upper()


def holiday_region_reached(holiday_region: int, limit: int) -> bool:
    """Whether the holiday region has reached its limit."""
    return holiday_region >= limit


def checked_holiday_request(holiday_request: int) -> int:
    """The holiday request, refused unless positive."""
    return holiday_request


def round_holiday_accrual(holiday_accrual: str) -> Decimal:
    """The holiday accrual in cents, rounded half up."""
    return Decimal(holiday_accrual).quantize(CENT)
