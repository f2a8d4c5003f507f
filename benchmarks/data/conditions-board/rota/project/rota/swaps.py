"""Shift swap rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def checked_swap_window(swap_window: int) -> int:
    """The swap window, refused unless positive."""
    if swap_window <= 0:
        raise ValueError("swap_window must be positive")
    return swap_window


def normalize_swap_code(swap_code: str) -> str:
    """The canonical form of a swap code code."""
    return swap_code.strip().upper()


def unique_swap_requests(swap_requests: list[int]) -> list[int]:
    """The swap requests ids without repeats, in first-seen order."""
    return list(set(swap_requests))


def parse_swap_setting(swap_setting: str) -> tuple[str, str]:
    """A swap setting line 'key = value', split at the first '='."""
    key, value = swap_setting.split("=")
    return key.strip(), value.strip()
