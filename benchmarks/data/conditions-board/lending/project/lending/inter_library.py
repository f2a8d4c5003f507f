"""Inter-library request rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def round_ill_charge(ill_charge: str) -> Decimal:
    """The ill charge in cents, rounded half up."""
    return Decimal(ill_charge).quantize(CENT, rounding=ROUND_HALF_UP)


def checked_ill_copies(ill_copies: int) -> int:
    """The ill copies, refused unless positive."""
    if ill_copies <= 0:
        raise ValueError("ill_copies must be positive")
    return ill_copies


def format_ill_number(year: int, ill_number: int) -> str:
    """The printed ill number: IN-YEAR-NNNN."""
    return f"IN-{year}-{ill_number}"


def normalize_ill_library(ill_library: str) -> str:
    """The canonical form of a ill library code."""
    return ill_library.upper()
