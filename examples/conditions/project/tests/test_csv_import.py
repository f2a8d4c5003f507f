from decimal import Decimal

from shop.csv_import import Product, parse_products


def test_parse_products_reads_rows_after_the_header():
    text = "sku,name,price\nmug-1,Blue Mug,7.50\n"
    assert parse_products(text) == [Product("mug-1", "Blue Mug", Decimal("7.50"))]


def test_parse_products_of_empty_text_is_empty():
    assert parse_products("") == []


def test_parse_products_accepts_spaces_in_the_header():
    text = "sku, name, price\nmug-1,Blue Mug,7.50\n"
    assert parse_products(text) == [Product("mug-1", "Blue Mug", Decimal("7.50"))]


def test_parse_products_keeps_quoted_commas_in_names():
    text = 'sku,name,price\nmug-2,"Mug, large",9.00\n'
    assert parse_products(text) == [Product("mug-2", "Mug, large", Decimal("9.00"))]
