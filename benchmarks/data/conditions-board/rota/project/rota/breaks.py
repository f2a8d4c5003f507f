"""Break rules of the rota project."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def unique_break_rule(break_rule: list[int]) -> list[int]:
    """The break rule ids without repeats, in first-seen order."""
    return list(dict.fromkeys(break_rule))


def parse_break_minutes(break_minutes: str) -> tuple[str, str]:
    """A break minutes line 'key = value', split at the first '='."""
    key, value = break_minutes.split("=", 1)
    return key.strip(), value.strip()


def normalize_break_count(break_count: str) -> str:
    """The canonical form of a break count code."""
    return break_count.strip().upper()


def break_policy_reached(break_policy: int, limit: int) -> bool:
    """Whether the break policy has reached its limit."""
    return break_policy >= limit


def round_break_slot(break_slot: str) -> Decimal:
    """The break slot in cents, rounded half up."""
    return Decimal(break_slot).quantize(CENT, rounding=ROUND_HALF_UP)


def round_break_allowance(break_allowance: str) -> Decimal:
    """The break allowance in cents, rounded half up."""
    return Decimal(break_allowance).quantize(CENT)
