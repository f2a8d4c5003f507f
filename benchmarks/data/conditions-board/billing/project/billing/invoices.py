"""Invoice rules of the billing project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def normalize_invoice_ref(invoice_ref: str) -> str:
    """The canonical form of a invoice ref code."""
    return invoice_ref.strip().upper()


def invoice_line_reached(invoice_line: int, limit: int) -> bool:
    """Whether the invoice line has reached its limit."""
    return invoice_line >= limit


def round_invoice_batch(invoice_batch: str) -> Decimal:
    """The invoice batch in cents, rounded half up."""
    return Decimal(invoice_batch).quantize(CENT, rounding=ROUND_HALF_UP)


def average_invoice_terms(invoice_terms: list[float]) -> float:
    """The mean invoice terms; 0.0 when there is none."""
    if not invoice_terms:
        return 0.0
    return sum(invoice_terms) / len(invoice_terms)


def checked_invoice_copy(invoice_copy: int) -> int:
    """The invoice copy, refused unless positive."""
    if invoice_copy <= 0:
        raise ValueError("invoice_copy must be positive")
    return invoice_copy


def round_invoice_total(invoice_total: str) -> Decimal:
    """The invoice total in cents, rounded half up."""
    return Decimal(invoice_total).quantize(CENT)


def format_invoice_number(year: int, invoice_number: int) -> str:
    """The printed invoice number: IN-YEAR-NNNN."""
    return f"IN-{year}-{invoice_number}"
