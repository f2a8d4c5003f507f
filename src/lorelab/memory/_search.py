"""Retrieval: experiences ranked and served by the hybrid rule, Skills by the relevance floor."""

from __future__ import annotations

import collections
import sqlite3
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from lorelab.memory import _numpy
from lorelab.memory._db import Database, counts, n_docs
from lorelab.memory._embedders import Embedder, dot, of_store
from lorelab.memory._experiences import fold_term_counts
from lorelab.memory._hybrid import (
    NO_FEEDBACK,
    Feedback,
    Grading,
    Signals,
    Tier,
    feedback_effect,
    fuse,
    ranks,
    sigmoid,
)
from lorelab.memory._models import RelevanceFloor
from lorelab.memory._relevance import (
    QueryTerms,
    RelevancePolicy,
    Scored,
    query_terms,
    rank,
    score,
)
from lorelab.memory._text import fts_query
from lorelab.memory._vectors import cache_for, has_vectors, small_store_scan, stored_vectors


def floor(policy: RelevancePolicy) -> RelevanceFloor:
    """The floor ``policy`` sets, as briefs publish it."""
    return RelevanceFloor(
        min_coverage=policy.min_coverage, min_matched_terms=policy.min_matched_terms
    )


def floor_text(policy: RelevancePolicy) -> str:
    """The floor in words, for the reasons given when nothing cleared it."""
    return (
        f"(score >= {policy.min_coverage}, "
        f">= {policy.min_matched_terms} informative task terms matched)"
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """One experience a brief could serve, with every score and why it was served or not."""

    rowid: int
    lexical: float
    """IDF-weighted share of the task's informative terms it holds (0..1)."""
    matched: tuple[str, ...]
    bm25: float | None
    """SQLite's BM25 (more negative is better); None when not a lexical candidate."""
    semantic: float | None
    """Cosine similarity with the task; None when it has no vector (reindex)."""
    fused: float
    confidence: float | None
    validity: str
    validity_reason: str | None
    feedback: Feedback
    served: bool = False
    reason: str = ""
    signals: Signals | None = None
    tier: Tier | None = None
    """How it is served: ``match`` (the same problem), ``related`` (context); None: not served."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """Every candidate for one task, best first, and what a brief serves of them."""

    mode: Literal["hybrid", "lexical"]
    candidates: list[Candidate]
    empty_reason: str | None
    grading: Grading | None = None
    """The rule that graded the candidates (that of the store's model); None: keyword floor."""

    @property
    def served(self) -> list[Candidate]:
        """The served candidates, ``match`` items first, each tier by confidence."""
        chosen = [item for item in self.candidates if item.served]
        return sorted(chosen, key=lambda item: (item.tier != "match", -(item.confidence or 0.0)))


# Verified experiences (of ?2 or of no project) by BM25, best first, at most ?3: FTS5 yields
# the most recent ?5 matches of ?1 in rowid order and stops, BM25 keeps the best ?4 of those,
# and only then are the trust and project filters applied.
_BM25_CANDIDATES: Final = (
    "SELECT e.id, e.terms, c.r FROM ("
    "SELECT id, r FROM ("
    "SELECT rowid AS id, bm25(experiences_fts) AS r FROM experiences_fts "
    "WHERE experiences_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?5"
    ") ORDER BY r LIMIT ?4"
    ") AS c JOIN experiences e ON e.id = c.id "
    "WHERE e.trust = 'verified' AND (?2 IS NULL OR e.project IS NULL OR e.project = ?2) "
    "ORDER BY c.r LIMIT ?3"
)


def _lexical_rows(
    conn: sqlite3.Connection, policy: RelevancePolicy, query: QueryTerms, project: str | None
) -> list[tuple[int, str, float]]:
    if not query.present:
        return []
    found = conn.execute(
        _BM25_CANDIDATES,
        (
            fts_query(query.present),
            project,
            policy.lexical_candidates,
            policy.candidates,
            policy.scan_limit,
        ),
    ).fetchall()
    return [(int(rowid), str(terms), float(r)) for rowid, terms, r in found]


@dataclass(frozen=True, slots=True)
class QueryVector:
    """A task's vector under one model, computed before the store is locked."""

    model_id: str
    text: str
    values: Sequence[float]


def _vector_model(conn: sqlite3.Connection) -> Embedder | None:
    embedder = of_store(conn)
    return embedder if has_vectors(conn, embedder) else None


QUERY_VECTORS_KEPT: Final = 1024
"""How many recent query vectors a store keeps (per model and text): a task briefed again, as
agents and their hooks often do, is not embedded again."""


class _RecentVectors:
    """The most recent query vectors of one store, by ``(model id, text)`` (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kept: collections.OrderedDict[tuple[str, str], Sequence[float]] = (
            collections.OrderedDict()
        )

    def get(self, key: tuple[str, str]) -> Sequence[float] | None:
        with self.lock:
            found = self.kept.get(key)
            if found is not None:
                self.kept.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], values: Sequence[float]) -> None:
        with self.lock:
            self.kept[key] = values
            while len(self.kept) > QUERY_VECTORS_KEPT:
                self.kept.popitem(last=False)


_recent: weakref.WeakKeyDictionary[Database, _RecentVectors] = weakref.WeakKeyDictionary()
_recent_lock = threading.Lock()


def query_vector(db: Database, policy: RelevancePolicy, task: str) -> QueryVector | None:
    """``task``'s vector under the store's model, computed outside any transaction.

    The model runs without the store's lock (and without Python's: onnxruntime releases it),
    so a server's other calls go on meanwhile. ``None`` when a ranking would not use it: the
    keyword-only policy, or a store without vectors (whose model is then never loaded). A
    reindex between this and the transaction switches the model: the ranking then sees a
    vector of another model and computes its own. The store keeps its last
    :data:`QUERY_VECTORS_KEPT` query vectors (the model is deterministic: a kept vector is
    the one the model would compute again); a served store also looks in, and adds to, the
    vectors its other processes computed (:attr:`Database.shared_queries`).
    """
    if not policy.hybrid:
        return None
    embedder = db.read(_vector_model)
    if embedder is None:
        return None
    with _recent_lock:
        recent = _recent.get(db)
        if recent is None:
            recent = _recent[db] = _RecentVectors()
    key = (embedder.model_id, task)
    values = recent.get(key)
    if values is None:
        shared = db.shared_queries
        if shared is not None:
            values = shared.get(embedder.model_id, embedder.dimensions, task)
        if values is None:
            values = embedder.embed_query(task)
            if shared is not None:
                shared.put(embedder.model_id, task, values)
        recent.put(key, values)
    return QueryVector(embedder.model_id, task, values)


def python_scan() -> bool:
    """Whether a small store is scanned in Python: in a process without numpy, whose import
    alone costs more than the scan (a process that has it uses the numpy cache)."""
    return not _numpy.loaded()


def _semantic(
    conn: sqlite3.Connection,
    embedder: Embedder,
    policy: RelevancePolicy,
    task: str,
    project: str | None,
    vector: QueryVector | None = None,
) -> dict[int, float]:
    """The best ``semantic_candidates`` cosines (none when the store holds no vector of its
    model); ``vector``, when it is ``task``'s under this model, is not computed again."""
    if not has_vectors(conn, embedder):
        return {}
    if vector is not None and vector.model_id == embedder.model_id and vector.text == task:
        query = vector.values
    else:
        query = embedder.embed_query(task)
    scores = None
    if python_scan():
        scores = small_store_scan(conn, embedder, query, project, policy.shortlist)
    if scores is None:
        ids, values = cache_for(conn, embedder).similarities(query, project, policy.shortlist)
        import numpy as np

        # Best first, ties by id: the order the Python sort below gives, without a Python
        # object per shortlisted vector.
        order = np.lexsort((ids, -values))[: policy.semantic_candidates]
        return dict(zip(ids[order].tolist(), values[order].tolist(), strict=True))
    best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return dict(best[: policy.semantic_candidates])


def _details(
    conn: sqlite3.Connection, rowids: list[int]
) -> dict[int, tuple[str, str, str | None, Feedback]]:
    """terms, validity, validity reason and feedback of each candidate."""
    found: dict[int, tuple[str, str, str | None, Feedback]] = {}
    for start in range(0, len(rowids), 500):
        batch = rowids[start : start + 500]
        marks = ",".join("?" * len(batch))
        ratings: dict[int, dict[str, int]] = {}
        for rowid, rating, count in conn.execute(
            f"SELECT experience_id, rating, count(*) FROM feedback "
            f"WHERE experience_id IN ({marks}) GROUP BY experience_id, rating",
            batch,
        ):
            ratings.setdefault(int(rowid), {})[str(rating)] = int(count)
        for rowid, terms, validity, reason in conn.execute(
            f"SELECT id, terms, validity, validity_reason FROM experiences WHERE id IN ({marks})",
            batch,
        ):
            rated = ratings.get(int(rowid))
            feedback = NO_FEEDBACK if rated is None else Feedback(**rated)
            found[int(rowid)] = (str(terms), str(validity), reason, feedback)
    return found


def _candidates(
    conn: sqlite3.Connection,
    embedder: Embedder,
    policy: RelevancePolicy,
    task: str,
    project: str | None,
    vector: QueryVector | None = None,
    *,
    explain: bool = True,
) -> tuple[list[Candidate], dict[int, int], dict[int, int], Callable[[Candidate], Candidate]]:
    """Every candidate (unsorted) with its lexical and semantic ranks, and what gives a
    candidate its lexical score (without ``explain``, none has it yet: a brief needs it only
    for the few it grades)."""
    fold_term_counts(conn, force=True)
    total = n_docs(conn, "experiences")
    query = query_terms(counts(conn, "experience_term_counts", "term", "docs"), task, total, policy)
    lexical_rows = _lexical_rows(conn, policy, query, project)
    semantic = _semantic(conn, embedder, policy, task, project, vector)
    bm25 = {rowid: r for rowid, _, r in lexical_rows}
    lexical_ranks = ranks({rowid: -r for rowid, r in bm25.items()})
    semantic_ranks = ranks(semantic)
    fused = fuse(lexical_ranks, semantic_ranks, policy.rrf_k)
    details = _details(conn, sorted(fused))
    candidates: list[Candidate] = []
    unscored = Scored(rowid=0, score=0.0, matched=(), bm25=0.0)
    for rowid, value in fused.items():
        terms, validity, reason, feedback = details[rowid]
        lexical = score(query, rowid, terms, bm25.get(rowid, 0.0)) if explain else unscored
        factor, _ = feedback_effect(feedback)
        candidates.append(
            Candidate(
                rowid=rowid,
                lexical=lexical.score,
                matched=lexical.matched,
                bm25=bm25.get(rowid),
                semantic=semantic.get(rowid),
                fused=round(value * factor, 8),
                confidence=None,
                validity=validity,
                validity_reason=reason,
                feedback=feedback,
            )
        )

    def scored(item: Candidate) -> Candidate:
        if explain:
            return item
        lexical = score(query, item.rowid, details[item.rowid][0], bm25.get(item.rowid, 0.0))
        return replace(item, lexical=lexical.score, matched=lexical.matched)

    return candidates, lexical_ranks, semantic_ranks, scored


def _withheld_reason(item: Candidate) -> str | None:
    if item.validity != "trusted":
        why = f": {item.validity_reason}" if item.validity_reason else ""
        return f"withheld: marked {item.validity}{why}"
    if item.feedback.withheld:
        return f"withheld: rated harmful {item.feedback.harmful} times ({item.feedback.describe()})"
    return None


def _near_duplicates(
    conn: sqlite3.Connection, embedder: Embedder, usable: list[Candidate], limit: float
) -> Callable[[int, int], bool]:
    """Whether two candidates' own vectors are at least ``limit`` similar (asked lazily: the
    few vectors a comparison needs are read when it is asked, each once)."""
    if sum(1 for item in usable if item.semantic is not None) < 2:
        return lambda a, b: False
    vectors: dict[int, tuple[float, ...]] = {}

    def vector(rowid: int) -> tuple[float, ...]:
        if rowid not in vectors:
            vectors[rowid] = stored_vectors(conn, embedder, [rowid])[rowid]
        return vectors[rowid]

    def close(a: int, b: int) -> bool:
        return dot(vector(a), vector(b)) >= limit

    return close


def _confidences(
    conn: sqlite3.Connection,
    embedder: Embedder,
    policy: RelevancePolicy,
    usable: list[Candidate],
    lexical_ranks: dict[int, int],
    semantic_ranks: dict[int, int],
) -> tuple[dict[int, Signals], dict[int, float]]:
    """The signals and confidence of each of the first ``served`` usable candidates.

    The margin is over the most similar *other* candidate that is not a near-duplicate of
    it: the same fix recorded twice is corroboration, not a rival.
    """
    duplicate = _near_duplicates(conn, embedder, usable, policy.duplicate_similarity)
    rule = policy.grading_for(embedder.model_id)
    by_similarity = sorted(
        (item for item in usable if item.semantic is not None),
        key=lambda item: -(item.semantic or 0.0),
    )
    signals: dict[int, Signals] = {}
    confidences: dict[int, float] = {}
    for position, item in enumerate(usable[: policy.served]):
        agree = lexical_ranks.get(item.rowid) == 1 and semantic_ranks.get(item.rowid) == 1
        rival = next(
            (
                other.semantic
                for other in by_similarity
                if other.rowid != item.rowid
                and (item.semantic is None or not duplicate(item.rowid, other.rowid))
            ),
            0.0,
        )
        semantic = item.semantic if item.semantic is not None else 0.0
        signals[item.rowid] = Signals(
            semantic=semantic,
            lexical=item.lexical,
            agreement=1.0 if agree else 0.0,
            margin=semantic - (rival or 0.0),
            first=1.0 if position == 0 else 0.0,
        )
        shift = feedback_effect(item.feedback)[1]
        confidences[item.rowid] = sigmoid(rule.logit(signals[item.rowid]) + shift)
    return signals, confidences


def rank_experiences(
    conn: sqlite3.Connection,
    policy: RelevancePolicy,
    task: str,
    project: str | None,
    vector: QueryVector | None = None,
    *,
    explain: bool = True,
) -> Ranking:
    """Every candidate experience for ``task``, best first, each graded, served or withheld
    (``vector``: the task's, computed before the transaction by :func:`query_vector`).

    Without ``explain`` (a brief), only the served candidates are listed: the same ones, with
    the same scores and reasons, without the work of scoring and explaining the rest."""
    if not policy.hybrid:
        return _lexical_ranking(conn, policy, task, project)
    embedder = of_store(conn)
    if not has_vectors(conn, embedder):
        return _lexical_ranking(conn, policy, task, project)
    found, lexical_ranks, semantic_ranks, scored = _candidates(
        conn, embedder, policy, task, project, vector, explain=explain
    )
    found.sort(key=lambda item: (-item.fused, -item.rowid))
    withheld_because = {item.rowid: _withheld_reason(item) for item in found}
    usable = [item for item in found if withheld_because[item.rowid] is None]
    graded = [scored(item) for item in usable[: policy.served]]  # their lexical scores
    usable[: policy.served] = graded
    signals, confidences = _confidences(
        conn, embedder, policy, usable, lexical_ranks, semantic_ranks
    )
    rule = policy.grading_for(embedder.model_id)
    nearest = max((item.semantic for item in usable if item.semantic is not None), default=None)
    gated = nearest is None or nearest < rule.min_similarity
    tiers = {rowid: None if gated else rule.tier(value) for rowid, value in confidences.items()}
    result: list[Candidate] = []
    # A brief lists only the served candidates, all of them among the graded.
    for item in found if explain else graded:
        withheld = withheld_because[item.rowid]
        confidence = confidences.get(item.rowid)
        tier = tiers.get(item.rowid)
        if tier is None and not explain:
            continue
        if withheld is not None:
            reason = withheld
        elif confidence is None:
            reason = f"withheld: not among the first {policy.served} trusted candidates"
        elif gated:
            reason = (
                f"withheld: no trusted candidate is {rule.min_similarity} similar to the task "
                f"(the most similar: {nearest or 0.0:.3f})"
            )
        elif tier == "match":
            reason = f"served as match: confidence {confidence:.3f} >= {rule.match}"
        elif tier == "related":
            reason = f"served as related: confidence {confidence:.3f} >= {rule.related} " + (
                f"(below {rule.match} for a match)"
                if rule.match <= 1.0
                else "(the rule of this store's model has no match tier)"
            )
        else:
            reason = f"withheld: confidence {confidence:.3f} < {rule.related}"
        result.append(
            Candidate(
                rowid=item.rowid,
                lexical=item.lexical,
                matched=item.matched,
                bm25=item.bm25,
                semantic=item.semantic,
                fused=item.fused,
                confidence=confidence,
                validity=item.validity,
                validity_reason=item.validity_reason,
                feedback=item.feedback,
                served=tier is not None,
                reason=reason,
                signals=signals.get(item.rowid),
                tier=tier,
            )
        )
    best = max(confidences.values(), default=None)
    empty = None
    if not any(t is not None for t in tiers.values()):
        empty = _empty_reason(best, rule, nearest if gated else None)
    return Ranking("hybrid", result, empty, rule)


def _empty_reason(best: float | None, rule: Grading, nearest: float | None) -> str:
    if best is None:
        return "no verified, trusted experience is a candidate for this task"
    if nearest is not None:
        return (
            f"nothing stored is about this task: the most similar trusted experience's "
            f"similarity {nearest:.3f} is below {rule.min_similarity}"
        )
    return (
        f"the evidence is too weak: the best candidate's confidence {best:.3f} is below "
        f"{rule.related} (related) and {rule.match} (match)"
    )


def _lexical_ranking(
    conn: sqlite3.Connection, policy: RelevancePolicy, task: str, project: str | None
) -> Ranking:
    """The keyword-only floor (a store without vectors, or ``hybrid=False``)."""
    scored = search_lexical(conn, policy, task, project)
    details = _details(conn, [item.rowid for item in scored])
    result: list[Candidate] = []
    for item in scored:
        _, validity, reason, feedback = details[item.rowid]
        candidate = Candidate(
            rowid=item.rowid,
            lexical=item.score,
            matched=item.matched,
            bm25=item.bm25,
            semantic=None,
            fused=item.score,
            confidence=None,
            validity=validity,
            validity_reason=reason,
            feedback=feedback,
        )
        withheld = _withheld_reason(candidate)
        served = withheld is None
        reason = withheld or "served: clears the keyword floor"
        result.append(replace(candidate, served=served, reason=reason))
    empty = None
    if not any(item.served for item in result):
        empty = f"nothing cleared the relevance floor {floor_text(policy)}"
    return Ranking("lexical", result, empty)


def _bm25_search(
    conn: sqlite3.Connection,
    policy: RelevancePolicy,
    task: str,
    table: str,
    term_docs: Callable[[Sequence[str]], dict[str, int]],
    sql: str,
    params: tuple[object, ...],
) -> list[Scored]:
    """``table``'s rows found for ``task`` by BM25 that clear the keyword floor, best first.

    ``sql`` selects ``(rowid, terms, bm25)`` given the full-text match, then ``params``.
    """
    query = query_terms(term_docs, task, n_docs(conn, table), policy)
    match = query.match(policy)
    if match is None or len(query.weights) < policy.min_matched_terms:
        return []
    found = conn.execute(sql, (match, *params)).fetchall()
    scored = [score(query, int(rowid), str(terms), float(r)) for rowid, terms, r in found]
    return rank([item for item in scored if item.clears(policy)])


def search_lexical(
    conn: sqlite3.Connection, policy: RelevancePolicy, task: str, project: str | None
) -> list[Scored]:
    """Verified experiences (of ``project`` or of none) clearing the keyword floor, best first."""
    fold_term_counts(conn, force=True)
    return _bm25_search(
        conn,
        policy,
        task,
        "experiences",
        counts(conn, "experience_term_counts", "term", "docs"),
        _BM25_CANDIDATES,
        (project, policy.pool, policy.candidates, policy.scan_limit),
    )


_SKILL_CANDIDATES: Final = (
    "SELECT s.id, s.terms, bm25(skills_fts) AS r FROM skills_fts "
    "JOIN skills s ON s.id = skills_fts.rowid "
    "WHERE skills_fts MATCH ? AND (?2 OR s.health > 0) AND s.validity = 'trusted' "
    "AND (?3 IS NULL OR s.project IS NULL OR s.project = ?3) "
    "ORDER BY r LIMIT ?4"
)


def search_skills(
    conn: sqlite3.Connection,
    policy: RelevancePolicy,
    task: str,
    project: str | None,
    include_review_required: bool,
) -> list[Scored]:
    """Trusted Skills (healthy ones unless asked) relevant to ``task``, best first."""
    return _bm25_search(
        conn,
        policy,
        task,
        "skills",
        counts(conn, "skills_vocab", "term", "doc"),
        _SKILL_CANDIDATES,
        (include_review_required, project, policy.pool),
    )
