"""The relevance floor: when a stored item is relevant enough to reach a brief or a plan.

For a task, the *informative terms* are its distinct index terms (:func:`terms`) that are not
too common in the store: a term in more than ``max(common_min_docs, common_fraction * N)`` of
the N indexed items says nothing about relevance. Each informative term weighs its BM25 IDF,
``ln(1 + (N' - df + 0.5) / (df + 0.5))`` with ``N' = max(N, idf_min_docs)``, so that in a small
store a word shared by every item (the project's own vocabulary) still counts. Candidates come
from the FTS5 index ranked by BM25; an item's *score* is the IDF-weighted share of the task's
informative terms it contains (in [0, 1]). An item clears the floor when its score is at least
``min_coverage`` **and** it contains at least ``min_matched_terms`` informative terms. Nothing
clearing the floor means an empty brief: say nothing rather than pad.

Candidate generation is bounded: among the items holding the terms worth matching
(:meth:`QueryTerms.match_terms`), the ``scan_limit`` most recent are ranked by BM25, the best
``candidates`` of those are filtered (trust, project) and the best ``pool`` are scored.

The floor's defaults were tuned in-sample on the authored set in ``tests/memory/data``. With
``hybrid`` (the default) the floor still governs Skills, while experiences are ranked and
served by the hybrid rule of :mod:`lorelab.memory._hybrid`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from lorelab.memory._hybrid import GRADINGS, Grading
from lorelab.memory._text import fts_query, unique_terms


@dataclass(frozen=True, slots=True)
class RelevancePolicy:
    """The documented floor and the retrieval knobs around it."""

    min_coverage: float = 0.25
    min_matched_terms: int = 3
    common_fraction: float = 0.1
    common_min_docs: int = 20
    idf_min_docs: int = 1000
    pool: int = 200
    candidates: int = 500
    scan_limit: int = 2000
    hybrid: bool = True
    """Rank experiences by BM25 and embeddings fused, served by the grading rule; False: the
    keyword-only floor above (also what a store without vectors falls back to)."""
    rrf_k: int = 60
    lexical_candidates: int = 50
    """The best this many by BM25 are fused (rank fusion gives rank 50 almost nothing)."""
    semantic_candidates: int = 50
    shortlist: int = 1000
    """Semantic scan: above this many usable vectors, a coarse prefix scan shortlists them."""
    served: int = 3
    """At most this many experiences (the first trusted candidates) are graded and served."""
    duplicate_similarity: float = 0.95
    """Candidates whose vectors are at least this similar are near-duplicates: neither counts
    as the other's rival in the margin signal (fixed, not tuned)."""
    grading: Grading | None = None
    """The grading rule; None (the default): the rule frozen for the store's embedding model
    (:data:`lorelab.memory._hybrid.GRADINGS`)."""

    def grading_for(self, model_id: str) -> Grading:
        """The grading rule briefs of a store whose vectors are of ``model_id`` use."""
        return self.grading if self.grading is not None else GRADINGS[model_id]


DEFAULT_POLICY: Final = RelevancePolicy()


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """A task's informative terms and their IDF weights."""

    weights: dict[str, float]
    present: tuple[str, ...]
    dropped_common: tuple[str, ...]
    doc_freq: dict[str, int]
    total: float = field(init=False)
    """The weights' sum (each candidate's coverage divides by it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", sum(self.weights.values()))

    def match_terms(self, policy: RelevancePolicy) -> tuple[str, ...]:
        """The terms worth matching: leaving the others out loses no item that could clear.

        An item that matches none of the returned terms matches only terms from the left-out
        set E. E is a run of the most common present terms chosen so that either it has
        fewer than ``min_matched_terms`` terms or its weights sum to less than
        ``min_coverage`` of the total: either way such an item cannot clear the floor. Leaving
        the most common terms out is what keeps BM25 ranking cheap in a large store.
        """
        by_commonness = sorted(self.present, key=lambda term: (-self.doc_freq[term], term))
        limit = policy.min_coverage * self.total
        by_weight = 0
        running = 0.0
        for term in by_commonness:
            if running + self.weights[term] >= limit:
                break
            running += self.weights[term]
            by_weight += 1
        skip = max(policy.min_matched_terms - 1, by_weight)
        return tuple(by_commonness[skip:])

    def match(self, policy: RelevancePolicy) -> str | None:
        """The FTS5 MATCH expression; None when no item can clear the floor.

        Items must hold one of :meth:`match_terms`; the second operand brings every present
        term into BM25, so candidates are still ranked by the whole task.
        """
        kept = self.match_terms(policy)
        if not kept:
            return None
        if len(kept) == len(self.present):
            return fts_query(kept)
        return f"({fts_query(kept)}) AND ({fts_query(self.present)})"


@dataclass(frozen=True, slots=True)
class Scored:
    """One candidate with its relevance."""

    rowid: int
    score: float
    matched: tuple[str, ...]
    bm25: float

    def clears(self, policy: RelevancePolicy) -> bool:
        return len(self.matched) >= policy.min_matched_terms and self.score >= policy.min_coverage


def idf(n_docs: int, doc_freq: int) -> float:
    """BM25's inverse document frequency (the always-positive form)."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def query_terms(
    doc_freq: Callable[[Sequence[str]], dict[str, int]],
    task: str,
    n_docs: int,
    policy: RelevancePolicy,
) -> QueryTerms:
    """The informative terms of ``task``; ``doc_freq`` gives the indexed items holding each term."""
    distinct = unique_terms(task)
    if not distinct:
        return QueryTerms({}, (), (), {})
    freq = doc_freq(distinct)
    limit = max(policy.common_min_docs, policy.common_fraction * n_docs)
    weights: dict[str, float] = {}
    dropped: list[str] = []
    for term in distinct:
        df = freq.get(term, 0)
        if df > limit:
            dropped.append(term)
            continue
        weights[term] = idf(max(n_docs, df, policy.idf_min_docs), df)
    present = tuple(term for term in weights if freq.get(term, 0) > 0)
    return QueryTerms(weights, present, tuple(dropped), {t: freq.get(t, 0) for t in weights})


def score(query: QueryTerms, rowid: int, doc_terms: str, bm25: float) -> Scored:
    """Score one candidate item whose index terms are ``doc_terms``."""
    present = set(doc_terms.split())
    matched = tuple(term for term in query.weights if term in present)
    total = query.total
    coverage = sum(query.weights[term] for term in matched) / total if total > 0 else 0.0
    return Scored(rowid=rowid, score=round(coverage, 6), matched=matched, bm25=bm25)


def rank(scored: list[Scored]) -> list[Scored]:
    """Highest score first; BM25 (more negative is better in SQLite) then newest id break ties."""
    return sorted(scored, key=lambda item: (-item.score, item.bm25, -item.rowid))
