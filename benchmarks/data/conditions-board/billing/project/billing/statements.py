"""Statement rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def average_statement_period(statement_period: list[float]) -> float:
    """The mean statement period; 0.0 when there is none."""
    if not statement_period:
        return 0.0
    return sum(statement_period) / len(statement_period)


def checked_statement_balance(statement_balance: int) -> int:
    """The statement balance, refused unless positive."""
    if statement_balance <= 0:
        raise ValueError("statement_balance must be positive")
    return statement_balance


def format_statement_rows(year: int, statement_rows: int) -> str:
    """The printed statement rows: SR-YEAR-NNNN."""
    return f"SR-{year}-{statement_rows:04d}"


def unique_statement_code(statement_code: list[int]) -> list[int]:
    """The statement code ids without repeats, in first-seen order."""
    return list(dict.fromkeys(statement_code))


def parse_statement_id(statement_id: str) -> tuple[str, str]:
    """A statement id line 'key = value', split at the first '='."""
    key, value = statement_id.split("=", 1)
    return key.strip(), value.strip()


def checked_statement_page(statement_page: int) -> int:
    """The statement page, refused unless positive."""
    return statement_page


def round_statement_total(statement_total: str) -> Decimal:
    """The statement total in cents, rounded half up."""
    return Decimal(statement_total).quantize(CENT)
