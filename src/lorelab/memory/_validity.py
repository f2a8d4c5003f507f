"""Validity states, brief feedback and explanations: what keeps an item out of briefs, and why.

An experience or Skill is ``trusted`` until someone marks it ``superseded``, ``contradicted``
or ``deprecated`` (with a reason); then briefs and plans withhold it, ``show`` and ``explain``
say why, and nothing is deleted: marking it trusted again restores it. Every change is kept in
``validity_events``. Feedback on a served experience changes later ranking by the rule in
:class:`lorelab.memory._hybrid.Feedback`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict

from lorelab.errors import UsageError
from lorelab.memory._db import ID, Database, format_id, maybe_one, now, parse_id
from lorelab.memory._hybrid import Feedback
from lorelab.memory._redact import Redactor
from lorelab.memory._relevance import RelevancePolicy
from lorelab.memory._retrieval_models import (
    ExplainCandidate,
    ExplainRequest,
    ExplainResult,
    FeedbackCounts,
    FeedbackRequest,
    FeedbackResult,
    ValidityRequest,
    ValidityResult,
)
from lorelab.memory._search import Candidate, rank_experiences

_TABLE_OF_PREFIX = {"exp": "experiences", "skill": "skills"}


def _item(item_id: str) -> tuple[str, int]:
    match = ID.fullmatch(item_id.strip()) if isinstance(item_id, str) else None
    if match is None or match.group(1) not in _TABLE_OF_PREFIX:
        raise UsageError(f"{item_id!r} is not an experience or Skill id (exp-N or skill-N)")
    return _TABLE_OF_PREFIX[match.group(1)], int(match.group(2))


def update_validity(db: Database, request: ValidityRequest) -> ValidityResult:
    table, number = _item(request.item_id)
    red = Redactor()
    reason = red.optional(request.reason)
    if request.state != "trusted" and (reason is None or not reason.strip()):
        raise UsageError(f"marking {request.item_id} {request.state} needs a reason (--reason)")
    if request.superseded_by is not None and request.state != "superseded":
        raise UsageError("superseded_by is only for the state superseded")
    replacement = None
    if request.superseded_by is not None:
        other_table, other = _item(request.superseded_by)
        replacement = request.superseded_by.strip()
        if (other_table, other) == (table, number):
            raise UsageError(f"{replacement} cannot supersede itself")

    def write(conn: sqlite3.Connection) -> ValidityResult:
        row = maybe_one(conn, table, number)
        if row is None:
            raise UsageError(f"{request.item_id} does not exist in this store")
        if replacement is not None and maybe_one(conn, *_item(replacement)) is None:
            raise UsageError(f"{replacement} does not exist in this store")
        stamp = now()
        shown = reason if replacement is None else f"{reason} (superseded by {replacement})"
        conn.execute(
            f"UPDATE {table} SET validity = ?, validity_reason = ? WHERE id = ?",
            (request.state, None if request.state == "trusted" else shown, number),
        )
        item_id = format_id("exp" if table == "experiences" else "skill", number)
        conn.execute(
            "INSERT INTO validity_events (created_at, item_id, state_before, state, reason, "
            "superseded_by) VALUES (?, ?, ?, ?, ?, ?)",
            (stamp, item_id, row["validity"], request.state, reason, replacement),
        )
        return ValidityResult(
            item_id=item_id,
            state=request.state,
            state_before=row["validity"],
            reason=reason,
            superseded_by=replacement,
            changed_at=stamp,
        )

    return db.write(write)


def _counts(feedback: Feedback) -> FeedbackCounts:
    # The output model carries the ratings under Feedback's own field names.
    return FeedbackCounts(**asdict(feedback))


def feedback_of(conn: sqlite3.Connection, number: int) -> Feedback:
    ratings = {
        str(rating): int(count)
        for rating, count in conn.execute(
            "SELECT rating, count(*) FROM feedback WHERE experience_id = ? GROUP BY rating",
            (number,),
        )
    }
    return Feedback(**ratings)


def add_feedback(db: Database, request: FeedbackRequest) -> FeedbackResult:
    number = parse_id(request.experience_id, "exp")
    brief = parse_id(request.brief_id, "brief") if request.brief_id is not None else None
    note = Redactor().optional(request.note)

    def write(conn: sqlite3.Connection) -> FeedbackResult:
        if maybe_one(conn, "experiences", number) is None:
            raise UsageError(f"{request.experience_id} does not exist in this store")
        if brief is not None:
            found = maybe_one(conn, "briefs", brief)
            if found is None:
                raise UsageError(f"{request.brief_id} does not exist in this store")
            if format_id("exp", number) not in found["experience_ids"]:
                raise UsageError(f"{request.brief_id} did not serve {request.experience_id}")
        conn.execute(
            "INSERT INTO feedback (created_at, experience_id, brief_id, rating, note) "
            "VALUES (?, ?, ?, ?, ?)",
            (now(), number, brief, request.rating, note),
        )
        feedback = feedback_of(conn, number)
        return FeedbackResult(
            experience_id=format_id("exp", number),
            rating=request.rating,
            counts=_counts(feedback),
            confidence_shift=feedback.logit,
            rank_factor=round(feedback.rank_factor, 4),
            withheld=feedback.withheld,
        )

    return db.write(write)


def _explained(conn: sqlite3.Connection, item: Candidate) -> ExplainCandidate:
    task, recorded_by = conn.execute(
        "SELECT task, recorded_by FROM experiences WHERE id = ?", (item.rowid,)
    ).fetchone()
    return ExplainCandidate(
        id=format_id("exp", item.rowid),
        task=str(task),
        recorded_by=recorded_by,
        lexical=item.lexical,
        matched_terms=list(item.matched),
        bm25=None if item.bm25 is None else round(item.bm25, 6),
        semantic=None if item.semantic is None else round(item.semantic, 6),
        fused=item.fused,
        confidence=None if item.confidence is None else round(item.confidence, 6),
        tier=item.tier,
        agreement=None if item.signals is None else item.signals.agreement,
        margin=None if item.signals is None else round(item.signals.margin, 6),
        validity=item.validity,  # type: ignore[arg-type]
        validity_reason=item.validity_reason,
        feedback=_counts(item.feedback),
        served=item.served,
        reason=item.reason,
    )


def explain(db: Database, policy: RelevancePolicy, request: ExplainRequest) -> ExplainResult:
    red = Redactor()
    task, project = red(request.task), red.optional(request.project)

    def read(conn: sqlite3.Connection) -> ExplainResult:
        ranking = rank_experiences(conn, policy, task, project)
        rule = ranking.grading
        return ExplainResult(
            task=task,
            project=project,
            mode=ranking.mode,
            threshold=None if rule is None else rule.related,
            match_threshold=None if rule is None else rule.match,
            empty=not ranking.served,
            reason=ranking.empty_reason,
            candidates=[_explained(conn, item) for item in ranking.candidates],
        )

    # A write transaction: retrieval first folds pending term counts (derived data only).
    return db.write(read)
