"""Stock levels and reservations for open orders."""


class Inventory:
    """Stock per SKU, minus what open orders have reserved."""

    def __init__(self) -> None:
        self._stock: dict[str, int] = {}
        self._reserved: dict[str, int] = {}

    def add(self, sku: str, quantity: int) -> None:
        """Receive ``quantity`` units of ``sku``."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._stock[sku] = self._stock.get(sku, 0) + quantity

    def available(self, sku: str) -> int:
        """Units of ``sku`` that are neither sold nor reserved."""
        return self._stock.get(sku, 0) - self._reserved.get(sku, 0)

    def reserve(self, sku: str, quantity: int) -> None:
        """Reserve units for an open order."""
        if quantity > self.available(sku):
            raise ValueError(f"only {self.available(sku)} units of {sku} available")
        self._reserved[sku] = self._reserved.get(sku, 0) + quantity

    def release(self, sku: str, quantity: int) -> None:
        """Give reserved units back, for example when an order is cancelled."""
        self._reserved[sku] = self._reserved.get(sku, 0) - quantity
