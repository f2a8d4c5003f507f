"""Value-added tax by region."""

from decimal import Decimal

RATES = {
    "DE": Decimal("0.19"),
    "FR": Decimal("0.20"),
    "NL": Decimal("0.21"),
    "LU": Decimal("0.17"),
}


def rate_for(region: str) -> Decimal:
    """The VAT rate of a region code such as 'DE'."""
    try:
        return RATES[region]
    except KeyError:
        raise ValueError(f"unknown region: {region!r}") from None


def tax_for(amount: Decimal, region: str) -> Decimal:
    """VAT on an amount, rounded to cents."""
    return round(amount * rate_for(region), 2)
