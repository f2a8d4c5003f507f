"""Payroll export rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def parse_payroll_line(payroll_line: str) -> tuple[str, str]:
    """A payroll line line 'key = value', split at the first '='."""
    key, value = payroll_line.split("=", 1)
    return key.strip(), value.strip()


def normalize_payroll_period(payroll_period: str) -> str:
    """The canonical form of a payroll period code."""
    return payroll_period.strip().upper()


def payroll_gross_reached(payroll_gross: int, limit: int) -> bool:
    """Whether the payroll gross has reached its limit."""
    return payroll_gross >= limit


def round_payroll_codes(payroll_codes: str) -> Decimal:
    """The payroll codes in cents, rounded half up."""
    return Decimal(payroll_codes).quantize(CENT, rounding=ROUND_HALF_UP)


def average_payroll_ref(payroll_ref: list[float]) -> float:
    """The mean payroll ref; 0.0 when there is none."""
    if not payroll_ref:
        return 0.0
    return sum(payroll_ref) / len(payroll_ref)


def normalize_payroll_grade(payroll_grade: str) -> str:
    """The canonical form of a payroll grade code."""
    return payroll_grade.upper()
