"""Exact sign tests, clustering by unit, the effect size with its interval, and the power note
every summary carries.

A *unit* is what is paired: a specification in the learning evaluation, a task in the
four-condition protocol. Each unit contributes one difference (treatment minus control,
averaged over its repetitions); positive and negative units are counted and ties are
excluded, as the sign test requires.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

DEFAULT_ALPHA: Final = 0.05
BOOTSTRAP_RESAMPLES: Final = 10_000
BOOTSTRAP_SEED: Final = 0


@dataclass(frozen=True, slots=True)
class SignTest:
    """An exact two-sided sign test over units; ties are counted but excluded from the test."""

    positive: int
    negative: int
    ties: int
    p_value: float

    def as_json(self) -> dict[str, int | float]:
        """The camelCase form used in summaries."""
        return {
            "positive": self.positive,
            "negative": self.negative,
            "ties": self.ties,
            "pValue": self.p_value,
        }


def sign_test_p_value(positive: int, negative: int) -> float:
    """Exact two-sided p-value of ``positive`` successes in ``positive + negative`` fair trials.

    Computed as ``min(1, 2 * P(X <= min(positive, negative)))`` for X ~ Binomial(n, 1/2),
    which equals the two-sided exact binomial test at p = 1/2. With no untied units the
    p-value is 1.
    """
    if positive < 0 or negative < 0:
        raise ValueError("counts must be non-negative")
    n = positive + negative
    if n == 0:
        return 1.0
    k = min(positive, negative)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2.0 * tail / float(2**n))


def sign_test(differences: Iterable[float]) -> SignTest:
    """Sign test over per-unit differences (treatment minus control)."""
    positive = negative = ties = 0
    for difference in differences:
        if difference > 0:
            positive += 1
        elif difference < 0:
            negative += 1
        else:
            ties += 1
    return SignTest(positive, negative, ties, sign_test_p_value(positive, negative))


def unit_differences(
    pairs: Mapping[str, Sequence[tuple[float, float]]],
) -> dict[str, float]:
    """Mean difference per unit from its ``(treatment, control)`` pairs, one per repetition."""
    result: dict[str, float] = {}
    for unit, values in pairs.items():
        if not values:
            raise ValueError(f"unit {unit!r} has no pairs")
        result[unit] = sum(t - c for t, c in values) / len(values)
    return result


def min_units_for_significance(alpha: float = DEFAULT_ALPHA) -> int:
    """The fewest untied units for which a unanimous sign test reaches ``p < alpha`` at all."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    n = 1
    while sign_test_p_value(n, 0) >= alpha:
        n += 1
    return n


def power_note(units: int, alpha: float = DEFAULT_ALPHA, unit_name: str = "specification") -> str:
    """A sentence saying whether ``units`` untied units can reach ``p < alpha`` at all."""
    needed = min_units_for_significance(alpha)
    best = sign_test_p_value(units, 0) if units else 1.0
    names = unit_name if units == 1 else f"{unit_name}s"
    if units >= needed:
        return (
            f"With {units} {names} a unanimous sign test gives p = {best:.4g}; "
            f"at least {needed} untied {unit_name}s are needed to reach p < {alpha}."
        )
    return (
        f"With {units} {names} even a unanimous sign test gives p = {best:.4g}, so "
        f"p < {alpha} cannot be reached; at least {needed} untied {unit_name}s are needed."
    )


@dataclass(frozen=True, slots=True)
class MeanInterval:
    """The mean of per-unit differences with a percentile bootstrap interval over units."""

    mean: float | None
    low: float | None
    high: float | None
    confidence: float
    resamples: int
    seed: int


def mean_difference_interval(
    differences: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> MeanInterval:
    """Mean per-unit difference and its percentile bootstrap interval, clustered by unit.

    Units (not repetitions) are resampled with replacement, so repetitions of one unit stay
    together; the generator's seed is fixed, so the same differences always give the same
    interval. No units: every figure is ``None``.
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    if resamples < 1:
        raise ValueError("resamples must be positive")
    if not differences:
        return MeanInterval(None, None, None, confidence, resamples, seed)
    values = np.asarray(differences, dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    means = values[picks].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return MeanInterval(float(values.mean()), float(low), float(high), confidence, resamples, seed)
