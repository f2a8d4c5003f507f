from decimal import Decimal

import pytest
from shop.pricing import apply_discount, line_total, order_total


def test_line_total_multiplies_price_and_quantity():
    assert line_total(Decimal("2.50"), 4) == Decimal("10.00")


def test_line_total_refuses_negative_quantity():
    with pytest.raises(ValueError, match="negative"):
        line_total(Decimal("1.00"), -1)


def test_line_total_rounds_half_up():
    assert line_total(Decimal("1.005"), 1) == Decimal("1.01")


def test_apply_discount_takes_the_percentage_off():
    assert apply_discount(Decimal("80.00"), 25) == Decimal("60.00")


def test_apply_discount_refuses_more_than_everything():
    with pytest.raises(ValueError, match="between 0 and 100"):
        apply_discount(Decimal("10.00"), 101)


def test_apply_discount_rounds_half_up():
    assert apply_discount(Decimal("10.05"), 50) == Decimal("5.03")


def test_order_total_sums_lines_then_discounts():
    assert order_total([(Decimal("10.00"), 2), (Decimal("5.00"), 1)], 10) == Decimal("22.50")
