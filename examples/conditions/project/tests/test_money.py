from decimal import Decimal

import pytest
from shop.money import format_amount, parse_amount


def test_parse_amount_accepts_comma_and_spaces():
    assert parse_amount(" 12,5 ") == Decimal("12.50")


def test_parse_amount_refuses_text():
    with pytest.raises(ValueError, match="not an amount"):
        parse_amount("twelve")


def test_parse_amount_refuses_empty_input():
    with pytest.raises(ValueError, match="empty"):
        parse_amount("   ")


def test_parse_amount_rounds_half_up():
    assert parse_amount("2.665") == Decimal("2.67")


def test_format_amount_shows_two_places_and_currency():
    assert format_amount(Decimal("12.5")) == "12.50 EUR"


def test_format_amount_groups_thousands():
    assert format_amount(Decimal("1234.5")) == "1,234.50 EUR"
