"""Hybrid ranking and graded, calibrated briefs: the rule that decides what a brief serves.

**Ranking.** Candidates come from two rankings of the verified experiences a brief may use:
lexical (FTS5 BM25 over the index terms) and semantic (cosine similarity of the vectors of
the store's embedding model). They are fused by reciprocal rank fusion,
``fused = 1/(k + rank_lexical) + 1/(k + rank_semantic)`` with ``k = 60`` (a ranking an item
is absent from adds nothing), then scaled by the item's feedback (:func:`feedback_effect`).

**Grading.** Each of the first ``served`` trusted candidates has five signals: its semantic
similarity (cosine), its lexical coverage (the IDF-weighted share of the task's informative
terms it holds), agreement (1 when it is first in both rankings), its margin (its cosine minus
the best cosine of any other candidate that is not a near-duplicate of it) and first (1 for
the first trusted candidate). A logistic model turns them into a *confidence*: a calibrated
probability that the item addresses the task (plus the item's feedback on the logit). An item
whose confidence reaches ``match`` is served as a ``match`` (the same problem: follow it);
one that reaches only ``related`` is served as ``related`` (the same area, another problem:
context, not instructions); below ``related`` it is not served. A task none of whose
candidates reaches ``related``, or whose most similar trusted candidate is less similar than
``min_similarity``, gets an empty brief. Each bundled model has its own rule (:data:`GRADINGS`):
the weights were fitted, and the thresholds chosen by a stated utility under the targets'
lower confidence bounds, on the splits of the held-out retrieval set seen so far (dev, test,
fresh, fresh2: ``benchmarks/retrieval_quality.py --fit --model NAME``); its fresh3 and
fresh4 splits are reported, never tuned on. A match threshold above 1 means no match tier.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from lorelab.memory import _embedding, _minilm

Tier = Literal["match", "related"]


@dataclass(frozen=True, slots=True)
class Signals:
    """The evidence for one candidate."""

    semantic: float
    lexical: float
    agreement: float
    margin: float
    first: float


@dataclass(frozen=True, slots=True)
class Grading:
    """A logistic model over the five signals (raw-scale weights) and the two tier thresholds."""

    bias: float
    semantic: float
    lexical: float
    agreement: float
    margin: float
    first: float
    min_similarity: float
    """Nothing is served unless some trusted candidate is at least this similar to the task:
    a task about nothing stored gets an empty brief, however its candidates rank."""
    match: float
    """Confidence at or above which an item is served as a ``match``."""
    related: float
    """Confidence at or above which (and below ``match``) an item is served as ``related``."""

    def logit(self, signals: Signals) -> float:
        return (
            self.bias
            + self.semantic * signals.semantic
            + self.lexical * signals.lexical
            + self.agreement * signals.agreement
            + self.margin * signals.margin
            + self.first * signals.first
        )

    def tier(self, confidence: float) -> Tier | None:
        """The tier an item of this confidence is served as; None: not served."""
        if confidence >= self.match:
            return "match"
        if confidence >= self.related:
            return "related"
        return None


def sigmoid(value: float) -> float:
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    exp = math.exp(value)
    return exp / (1.0 + exp)


# Fitted on every split seen so far, dev, test, fresh and fresh2 (`python
# benchmarks/retrieval_quality.py --fit --model wordllama`); the thresholds maximise the
# utility stated in docs/memory.md there, with each target met at its one-sided 90% lower
# confidence bound; the fresh3 and fresh4 splits are reported. See there for the figures.
DEFAULT_GRADING: Final = Grading(
    bias=-3.3405,
    semantic=1.7526,
    lexical=3.3152,
    agreement=1.0415,
    margin=3.8142,
    first=1.3523,
    min_similarity=0.33,
    match=0.915,
    related=0.2,
)


# Fitted the same way for MiniLM's signals (the same splits, utility and constraints:
# `python benchmarks/retrieval_quality.py --fit --model minilm`).
MINILM_GRADING: Final = Grading(
    bias=-4.145,
    semantic=4.0418,
    lexical=2.2391,
    agreement=1.0341,
    margin=3.9154,
    first=1.252,
    min_similarity=0.37,
    match=0.96,
    related=0.075,
)


GRADINGS: Final[Mapping[str, Grading]] = {
    _embedding.MODEL_ID: DEFAULT_GRADING,
    _minilm.MODEL_ID: MINILM_GRADING,
}
"""The frozen grading of each bundled embedding model, by model id (the store's model picks)."""


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


NO_FEEDBACK: Final = Feedback()
"""An item never rated (most are): shared, so that its effect is known without arithmetic."""


def feedback_effect(feedback: Feedback | None) -> tuple[float, float]:
    """(rank factor, logit shift) of ``feedback`` (none: no effect)."""
    if feedback is None or feedback is NO_FEEDBACK:
        return 1.0, 0.0  # what the properties give for no ratings, exactly
    return feedback.rank_factor, feedback.logit
