from decimal import Decimal

from shop.shipping import shipping_cost


def test_small_orders_pay_the_flat_rate():
    assert shipping_cost(Decimal("20.00"), 1.0) == Decimal("4.90")


def test_heavy_parcels_pay_a_surcharge():
    assert shipping_cost(Decimal("20.00"), 12.0) == Decimal("7.40")


def test_shipping_is_free_from_fifty_euros():
    assert shipping_cost(Decimal("50.00"), 1.0) == Decimal("0.00")
