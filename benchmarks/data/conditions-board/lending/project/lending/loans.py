"""Loan rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def checked_loan_code(loan_code: int) -> int:
    """The loan code, refused unless positive."""
    if loan_code <= 0:
        raise ValueError("loan_code must be positive")
    return loan_code


def format_loan_period(year: int, loan_period: int) -> str:
    """The printed loan period: LP-YEAR-NNNN."""
    return f"LP-{year}-{loan_period:04d}"


def unique_loan_items(loan_items: list[int]) -> list[int]:
    """The loan items ids without repeats, in first-seen order."""
    return list(dict.fromkeys(loan_items))


def parse_loan_limit(loan_limit: str) -> tuple[str, str]:
    """A loan limit line 'key = value', split at the first '='."""
    key, value = loan_limit.split("=", 1)
    return key.strip(), value.strip()


def normalize_loan_ids(loan_ids: str) -> str:
    """The canonical form of a loan ids code."""
    return loan_ids.strip().upper()


def round_loan_deposit(loan_deposit: str) -> Decimal:
    """The loan deposit in cents, rounded half up."""
    return Decimal(loan_deposit).quantize(CENT)


def format_loan_number(year: int, loan_number: int) -> str:
    """The printed loan number: LN-YEAR-NNNN."""
    return f"LN-{year}-{loan_number}"
