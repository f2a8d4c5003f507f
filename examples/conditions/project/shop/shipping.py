"""Shipping cost of an order."""

from decimal import Decimal

FLAT_RATE = Decimal("4.90")
FREE_FROM = Decimal("50.00")


def shipping_cost(order_total: Decimal, weight_kg: float) -> Decimal:
    """Flat rate plus a surcharge for heavy parcels; free from FREE_FROM upwards."""
    if order_total > FREE_FROM:
        return Decimal("0.00")
    surcharge = Decimal("2.50") if weight_kg > 10 else Decimal("0.00")
    return FLAT_RATE + surcharge
