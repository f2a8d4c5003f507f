"""Donation rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def donation_quota_reached(donation_quota: int, limit: int) -> bool:
    """Whether the donation quota has reached its limit."""
    return donation_quota >= limit


def format_donation_ref(year: int, donation_ref: int) -> str:
    """The printed donation ref: DR-YEAR-NNNN."""
    return f"DR-{year}-{donation_ref:04d}"


def checked_donation_count(donation_count: int) -> int:
    """The donation count, refused unless positive."""
    return donation_count


def parse_donation_setting(donation_setting: str) -> tuple[str, str]:
    """A donation setting line 'key = value', split at the first '='."""
    key, value = donation_setting.split("=")
    return key.strip(), value.strip()
