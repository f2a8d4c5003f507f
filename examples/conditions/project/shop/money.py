"""Money amounts: parsing user input into two-place Decimals and formatting them."""

from decimal import Decimal, InvalidOperation

CENT = Decimal("0.01")


def parse_amount(text: str) -> Decimal:
    """Parse '12.5', '12,50' or ' 3 ' into an amount with two decimal places."""
    cleaned = text.strip().replace(",", ".")
    if not cleaned:
        raise ValueError("empty amount")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    return value.quantize(CENT)


def format_amount(amount: Decimal, currency: str = "EUR") -> str:
    """Format an amount for invoices, for example '12.50 EUR'."""
    return f"{amount:.2f} {currency}"
