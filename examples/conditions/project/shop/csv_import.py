"""Product import from the supplier's CSV export."""

from dataclasses import dataclass
from decimal import Decimal

from shop.money import parse_amount


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    price: Decimal


def parse_products(text: str) -> list[Product]:
    """Parse 'sku,name,price' rows after a header line."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split(",")
    if header != ["sku", "name", "price"]:
        raise ValueError(f"unexpected header: {lines[0]!r}")
    products = []
    for line in lines[1:]:
        sku, name, price = line.split(",")
        products.append(Product(sku.strip(), name.strip(), parse_amount(price)))
    return products
