"""Retrieval over the store: experiences and Skills that clear the relevance floor, ranked."""

from __future__ import annotations

import sqlite3

from lorelab.memory._db import counts, n_docs
from lorelab.memory._experiences import fold_term_counts
from lorelab.memory._models import RelevanceFloor
from lorelab.memory._relevance import RelevancePolicy, Scored, query_terms, rank, score


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


def search_experiences(
    conn: sqlite3.Connection, policy: RelevancePolicy, task: str, project: str | None
) -> list[Scored]:
    """Verified experiences (of ``project`` or of none) relevant to ``task``, best first."""
    fold_term_counts(conn, force=True)
    total = n_docs(conn, "experiences")
    query = query_terms(counts(conn, "experience_term_counts", "term", "docs"), task, total, policy)
    match = query.match(policy)
    if match is None or len(query.weights) < policy.min_matched_terms:
        return []
    # Innermost: the most recent matching items, which FTS5 yields in rowid order and stops
    # at the limit, so BM25 is computed for a bounded number of rows. Then the best of
    # those by BM25; only then the trust and project filters.
    found = conn.execute(
        "SELECT e.id, e.terms, c.r FROM ("
        "SELECT id, r FROM ("
        "SELECT rowid AS id, bm25(experiences_fts) AS r FROM experiences_fts "
        "WHERE experiences_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?5"
        ") ORDER BY r LIMIT ?4"
        ") AS c JOIN experiences e ON e.id = c.id "
        "WHERE e.trust = 'verified' AND (?2 IS NULL OR e.project IS NULL OR e.project = ?2) "
        "ORDER BY c.r LIMIT ?3",
        (match, project, policy.pool, policy.candidates, policy.scan_limit),
    ).fetchall()
    scored = [score(query, int(rowid), str(terms), float(r)) for rowid, terms, r in found]
    return rank([item for item in scored if item.clears(policy)])


def search_skills(
    conn: sqlite3.Connection,
    policy: RelevancePolicy,
    task: str,
    project: str | None,
    include_review_required: bool,
) -> list[Scored]:
    """Skills (healthy ones unless asked) relevant to ``task``, best first."""
    total = n_docs(conn, "skills")
    query = query_terms(counts(conn, "skills_vocab", "term", "doc"), task, total, policy)
    match = query.match(policy)
    if match is None or len(query.weights) < policy.min_matched_terms:
        return []
    found = conn.execute(
        "SELECT s.id, s.terms, bm25(skills_fts) AS r FROM skills_fts "
        "JOIN skills s ON s.id = skills_fts.rowid "
        "WHERE skills_fts MATCH ? AND (?2 OR s.health > 0) "
        "AND (?3 IS NULL OR s.project IS NULL OR s.project = ?3) "
        "ORDER BY r LIMIT ?4",
        (match, include_review_required, project, policy.pool),
    ).fetchall()
    scored = [score(query, int(rowid), str(terms), float(r)) for rowid, terms, r in found]
    return rank([item for item in scored if item.clears(policy)])
