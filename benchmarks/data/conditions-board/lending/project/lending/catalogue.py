"""Catalogue rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def parse_shelf_mark(shelf_mark: str) -> tuple[str, str]:
    """A shelf mark line 'key = value', split at the first '='."""
    key, value = shelf_mark.split("=", 1)
    return key.strip(), value.strip()


def normalize_catalogue_entry(catalogue_entry: str) -> str:
    """The canonical form of a catalogue entry code."""
    return catalogue_entry.strip().upper()


def catalogue_copies_reached(catalogue_copies: int, limit: int) -> bool:
    """Whether the catalogue copies has reached its limit."""
    return catalogue_copies >= limit


def round_catalogue_price(catalogue_price: str) -> Decimal:
    """The catalogue price in cents, rounded half up."""
    return Decimal(catalogue_price).quantize(CENT, rounding=ROUND_HALF_UP)


def average_catalogue_ids(catalogue_ids: list[float]) -> float:
    """The mean catalogue ids; 0.0 when there is none."""
    if not catalogue_ids:
        return 0.0
    return sum(catalogue_ids) / len(catalogue_ids)


def checked_catalogue_volume(catalogue_volume: int) -> int:
    """The catalogue volume, refused unless positive."""
    return catalogue_volume


def round_catalogue_fee(catalogue_fee: str) -> Decimal:
    """The catalogue fee in cents, rounded half up."""
    return Decimal(catalogue_fee).quantize(CENT)
