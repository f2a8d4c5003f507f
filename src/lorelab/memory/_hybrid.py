"""Hybrid ranking and calibrated abstention: the rule that decides what a brief serves.

**Ranking.** Candidates come from two rankings of the verified experiences a brief may use:
lexical (FTS5 BM25 over the index terms) and semantic (cosine similarity of the bundled
embedding model's vectors). They are fused by reciprocal rank fusion,
``fused = 1/(k + rank_lexical) + 1/(k + rank_semantic)`` with ``k = 60`` (a ranking an item
is absent from adds nothing), then scaled by the item's feedback (:func:`feedback_effect`).

**Abstention.** The best candidate's evidence is four signals: its semantic similarity
(cosine), its lexical coverage (the IDF-weighted share of the task's informative terms it
holds), agreement (1 when it is first in both rankings) and its margin (its cosine minus the
best cosine of any other candidate). A logistic model turns them into a confidence in [0, 1]
(plus the item's feedback on the logit); the brief serves the first ``served`` candidates only
when that confidence reaches the threshold, or when the best candidate's evidence is *strong*:
semantic similarity and lexical coverage both above anything a must-be-silent dev task
reached. Otherwise the brief is empty. The weights and the
threshold were fitted on the dev split of the held-out retrieval set only
(``benchmarks/retrieval_quality.py --fit``); its test split is reported, never tuned on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Abstention:
    """A logistic rule over the four signals (raw-scale weights) and its serving threshold."""

    bias: float
    semantic: float
    lexical: float
    agreement: float
    margin: float
    threshold: float
    strong_semantic: float
    strong_lexical: float
    """Evidence above every must-be-silent dev task on both signals at once (a near-repeat of
    stored work) is served whatever the logistic confidence says: the dev split holds no such
    task, so the fitted weights say nothing about that regime."""

    def strong(self, signals: Signals) -> bool:
        return signals.semantic >= self.strong_semantic and signals.lexical >= self.strong_lexical

    def logit(self, signals: Signals) -> float:
        return (
            self.bias
            + self.semantic * signals.semantic
            + self.lexical * signals.lexical
            + self.agreement * signals.agreement
            + self.margin * signals.margin
        )


@dataclass(frozen=True, slots=True)
class Signals:
    """The evidence for one candidate."""

    semantic: float
    lexical: float
    agreement: float
    margin: float


def sigmoid(value: float) -> float:
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    exp = math.exp(value)
    return exp / (1.0 + exp)


# Fitted on the dev split only (`python benchmarks/retrieval_quality.py --fit`): weights kept
# non-negative; the threshold is the one with the highest dev recall@3 among those giving dev
# silence >= 0.95 and wrong-first <= 0.02. See docs/memory.md for the figures.
DEFAULT_ABSTENTION: Final = Abstention(
    bias=-1.1249,
    semantic=0.0,
    lexical=0.0,
    agreement=2.0992,
    margin=0.6041,
    threshold=0.7523,
    strong_semantic=0.63,
    strong_lexical=0.53,
)


def ranks(scores: Mapping[int, float]) -> dict[int, int]:
    """1-based ranks, highest score first; ties broken by the newer (larger) id."""
    ordered = sorted(scores, key=lambda rowid: (-scores[rowid], -rowid))
    return {rowid: position for position, rowid in enumerate(ordered, start=1)}


def fuse(lexical: Mapping[int, int], semantic: Mapping[int, int], k: int) -> dict[int, float]:
    """Reciprocal rank fusion of two rank maps (an absent rank contributes nothing)."""
    fused: dict[int, float] = {}
    for rowid in {*lexical, *semantic}:
        total = 0.0
        if rowid in lexical:
            total += 1.0 / (k + lexical[rowid])
        if rowid in semantic:
            total += 1.0 / (k + semantic[rowid])
        fused[rowid] = total
    return fused


@dataclass(frozen=True, slots=True)
class Feedback:
    """How an item was rated after it was served."""

    helpful: int = 0
    ignored: int = 0
    misleading: int = 0
    harmful: int = 0

    @property
    def logit(self) -> float:
        """The shift to the confidence logit: +0.5 per helpful (at most +1), -0.5 per
        misleading, -1 per harmful; ignored only counts."""
        return min(0.5 * self.helpful, 1.0) - 0.5 * self.misleading - 1.0 * self.harmful

    @property
    def rank_factor(self) -> float:
        """The fused score's multiplier: 1 + 0.15 x the logit shift, kept within [0.7, 1.15]."""
        return 1.0 + 0.15 * max(-2.0, min(1.0, self.logit))

    @property
    def withheld(self) -> bool:
        """Repeated harm withholds an item: two or more harmful ratings, more than helpful."""
        return self.harmful >= 2 and self.harmful > self.helpful

    def describe(self) -> str:
        return (
            f"{self.helpful} helpful, {self.ignored} ignored, {self.misleading} misleading, "
            f"{self.harmful} harmful"
        )


def feedback_effect(feedback: Feedback | None) -> tuple[float, float]:
    """(rank factor, logit shift) of ``feedback`` (none: no effect)."""
    if feedback is None:
        return 1.0, 0.0
    return feedback.rank_factor, feedback.logit
