import pytest
from shop.inventory import Inventory


def _stocked() -> Inventory:
    inventory = Inventory()
    inventory.add("mug", 5)
    return inventory


def test_reserve_lowers_availability():
    inventory = _stocked()
    inventory.reserve("mug", 2)
    assert inventory.available("mug") == 3


def test_reserve_more_than_available_is_refused():
    inventory = _stocked()
    with pytest.raises(ValueError, match="available"):
        inventory.reserve("mug", 6)


def test_release_gives_units_back():
    inventory = _stocked()
    inventory.reserve("mug", 2)
    inventory.release("mug", 2)
    assert inventory.available("mug") == 5


def test_reserve_refuses_non_positive_quantities():
    inventory = _stocked()
    with pytest.raises(ValueError, match="positive"):
        inventory.reserve("mug", -1)


def test_release_more_than_reserved_is_refused():
    inventory = _stocked()
    inventory.reserve("mug", 1)
    with pytest.raises(ValueError, match="reserved"):
        inventory.release("mug", 2)
