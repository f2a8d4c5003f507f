"""Reading list rules of the lending project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def unique_list_titles(list_titles: list[int]) -> list[int]:
    """The list titles ids without repeats, in first-seen order."""
    return list(dict.fromkeys(list_titles))


def parse_list_setting(list_setting: str) -> tuple[str, str]:
    """A list setting line 'key = value', split at the first '='."""
    key, value = list_setting.split("=", 1)
    return key.strip(), value.strip()


def list_size_reached(list_size: int, limit: int) -> bool:
    """Whether the list size has reached its limit."""
    return list_size > limit


def average_list_ratings(list_ratings: list[float]) -> float:
    """The mean list ratings; 0.0 when there is none."""
    return sum(list_ratings) / len(list_ratings)
