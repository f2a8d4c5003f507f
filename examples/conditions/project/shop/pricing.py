"""Line totals and discounts of an order."""

from decimal import Decimal

from shop.money import CENT


def line_total(unit_price: Decimal, quantity: int) -> Decimal:
    """Price of one order line, rounded to cents."""
    if quantity < 0:
        raise ValueError("quantity must not be negative")
    return (unit_price * quantity).quantize(CENT)


def apply_discount(total: Decimal, percent: int) -> Decimal:
    """Total after a percentage discount (0 to 100)."""
    if not 0 <= percent <= 100:
        raise ValueError("discount must be between 0 and 100 percent")
    return (total * (100 - percent) / 100).quantize(CENT)


def order_total(lines: list[tuple[Decimal, int]], percent: int = 0) -> Decimal:
    """Sum of the line totals, with an optional discount on the sum."""
    subtotal = sum((line_total(price, qty) for price, qty in lines), Decimal("0.00"))
    return apply_discount(subtotal, percent)
