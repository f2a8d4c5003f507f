"""Vat rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def format_vat_region(year: int, vat_region: int) -> str:
    """The printed vat region: VR-YEAR-NNNN."""
    return f"VR-{year}-{vat_region:04d}"


def unique_vat_threshold(vat_threshold: list[int]) -> list[int]:
    """The vat threshold ids without repeats, in first-seen order."""
    return list(dict.fromkeys(vat_threshold))


def parse_vat_rate(vat_rate: str) -> tuple[str, str]:
    """A vat rate line 'key = value', split at the first '='."""
    key, value = vat_rate.split("=", 1)
    return key.strip(), value.strip()


def normalize_vat_filings(vat_filings: str) -> str:
    """The canonical form of a vat filings code."""
    return vat_filings.strip().upper()


def vat_number_reached(vat_number: int, limit: int) -> bool:
    """Whether the vat number has reached its limit."""
    return vat_number >= limit


def normalize_vat_code(vat_code: str) -> str:
    """The canonical form of a vat code code."""
    return vat_code.upper()
