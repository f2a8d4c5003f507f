"""Payment rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def payer_code_reached(payer_code: int, limit: int) -> bool:
    """Whether the payer code has reached its limit."""
    return payer_code >= limit


def round_payment_run(payment_run: str) -> Decimal:
    """The payment run in cents, rounded half up."""
    return Decimal(payment_run).quantize(CENT, rounding=ROUND_HALF_UP)


def average_payment_amount(payment_amount: list[float]) -> float:
    """The mean payment amount; 0.0 when there is none."""
    if not payment_amount:
        return 0.0
    return sum(payment_amount) / len(payment_amount)


def checked_payment_share(payment_share: int) -> int:
    """The payment share, refused unless positive."""
    if payment_share <= 0:
        raise ValueError("payment_share must be positive")
    return payment_share


def format_payment_batch(year: int, payment_batch: int) -> str:
    """The printed payment batch: PB-YEAR-NNNN."""
    return f"PB-{year}-{payment_batch:04d}"


def round_payment_fee(payment_fee: str) -> Decimal:
    """The payment fee in cents, rounded half up."""
    return Decimal(payment_fee).quantize(CENT)


def normalize_payment_method(payment_method: str) -> str:
    """The canonical form of a payment method code."""
    return payment_method.upper()
