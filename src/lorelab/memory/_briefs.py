"""Briefs: what ``prepare`` (and ``start``) hand an agent, recorded for audits."""

from __future__ import annotations

import contextlib
import contextvars
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from lorelab._model import estimate_tokens
from lorelab.errors import PreflightError
from lorelab.memory._brief import Rendered, render
from lorelab.memory._db import Database, Row, dumps, format_id, loads, now, one, optional_id
from lorelab.memory._experiences import fold_term_counts, term_counts_behind
from lorelab.memory._item_models import BriefRecord, StoredCommand
from lorelab.memory._models import (
    AvoidCommand,
    Brief,
    BriefExperience,
    BriefSkill,
    PrepareRequest,
)
from lorelab.memory._redact import Redactor
from lorelab.memory._relevance import RelevancePolicy
from lorelab.memory._search import (
    QueryVector,
    floor,
    floor_text,
    query_vector,
    rank_experiences,
    search_skills,
)
from lorelab.memory._skills import skill_view
from lorelab.memory._text import normalise_command

MAX_BRIEF_EXPERIENCES: Final = 5
MAX_BRIEF_SKILLS: Final = 3
MAX_AVOID: Final = 10
PLAN_BRIEF_TOKENS: Final = 1200
_RECORD_BRIEFS: Final = contextvars.ContextVar[bool]("lorelab_record_briefs", default=True)


@contextlib.contextmanager
def briefs_unrecorded() -> Iterator[None]:
    """``prepare`` inside this block briefs without recording the brief (``brief_id`` null).

    ``lorelab serve`` uses it for a read token: its calls store nothing, not even the audit
    record of a brief. Not a request field, so no client can turn the audit off for itself.
    """
    reset = _RECORD_BRIEFS.set(False)
    try:
        yield
    finally:
        _RECORD_BRIEFS.reset(reset)


@dataclass(frozen=True, slots=True)
class BriefQuery:
    """What one brief is composed for."""

    task: str
    project: str | None
    include_skills: bool
    budget_tokens: int
    plan_id: int | None = None
    vector: QueryVector | None = None
    """The task's vector, computed before the transaction (None: the ranking computes it)."""


def brief_view(row: Row) -> BriefRecord:
    return BriefRecord(
        id=format_id("brief", int(row["id"])),
        task=row["task"],
        project=row["project"],
        empty=bool(row["empty"]),
        experience_ids=loads(row["experience_ids"]),
        skill_ids=loads(row["skill_ids"]),
        tokens_estimate=int(row["tokens_estimate"]),
        budget_tokens=int(row["budget_tokens"]),
        plan_id=optional_id("plan", row["plan_id"]),
        text=row["text"],
        created_at=row["created_at"],
    )


def _avoid(row: Row, exp_id: str, seen: set[str]) -> list[AvoidCommand]:
    commands = [StoredCommand.model_validate(c) for c in loads(row["commands"])]
    # A command that also succeeded in the same experience (or was its passing verification)
    # was part of the normal fix-and-rerun loop, not a dead end.
    succeeded = {normalise_command(c.command) for c in commands if c.exit_code == 0}
    succeeded.add(normalise_command(row["verification_command"]))
    avoid: list[AvoidCommand] = []
    for command in commands:
        key = normalise_command(command.command)
        if command.exit_code == 0 or key in succeeded or key in seen:
            continue
        seen.add(key)
        avoid.append(
            AvoidCommand(command=command.command, exit_code=command.exit_code, experience_id=exp_id)
        )
    return avoid


def _experiences(
    conn: sqlite3.Connection, policy: RelevancePolicy, query: BriefQuery
) -> tuple[list[BriefExperience], list[AvoidCommand], str | None]:
    ranking = rank_experiences(conn, policy, query.task, query.project, query.vector, explain=False)
    experiences: list[BriefExperience] = []
    avoid: list[AvoidCommand] = []
    seen: set[str] = set()
    for item in ranking.served[:MAX_BRIEF_EXPERIENCES]:
        row = one(conn, "experiences", item.rowid)
        exp_id = format_id("exp", item.rowid)
        confidence = None if item.confidence is None else round(item.confidence, 6)
        experiences.append(
            BriefExperience(
                id=exp_id,
                # The keyword floor (no vectors) grades nothing: what clears it is a match.
                tier=item.tier or "match",
                confidence=confidence,
                score=confidence if confidence is not None else item.lexical,
                task=row["task"],
                summary=row["summary"],
                verification_command=row["verification_command"],
            )
        )
        if item.tier != "related":
            # Commands to avoid are advice: only a match (the same problem) gives any.
            avoid += _avoid(row, exp_id, seen)
    return experiences, avoid, ranking.empty_reason


def _skills(
    conn: sqlite3.Connection, policy: RelevancePolicy, query: BriefQuery
) -> list[BriefSkill]:
    if not query.include_skills:
        return []
    skills: list[BriefSkill] = []
    for item in search_skills(conn, policy, query.task, query.project, False)[:MAX_BRIEF_SKILLS]:
        skill = skill_view(one(conn, "skills", item.rowid))
        skills.append(
            BriefSkill(
                id=skill.id,
                name=skill.name,
                description=skill.description,
                score=item.score,
                health=skill.health,
                steps=skill.steps,
            )
        )
    return skills


def _insert(conn: sqlite3.Connection, query: BriefQuery, composed: _Composed) -> int:
    rendered = composed.rendered
    cursor = conn.execute(
        "INSERT INTO briefs (created_at, task, project, empty, experience_ids, skill_ids, "
        "avoid_commands, tokens_estimate, budget_tokens, plan_id, text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            now(),
            query.task,
            query.project,
            int(not rendered.text),
            dumps([item.id for item in rendered.experiences]),
            dumps([item.id for item in rendered.skills]),
            dumps([item.model_dump() for item in rendered.avoid]),
            composed.tokens,
            query.budget_tokens,
            query.plan_id,
            rendered.text,
        ),
    )
    return int(cursor.lastrowid or 0)


@dataclass(frozen=True, slots=True)
class _Composed:
    """A brief's content, before it is recorded (or not)."""

    rendered: Rendered
    tokens: int
    reason: str | None
    omitted: int


def _compose(conn: sqlite3.Connection, policy: RelevancePolicy, query: BriefQuery) -> _Composed:
    experiences, avoid, nothing_served = _experiences(conn, policy, query)
    skills = _skills(conn, policy, query)
    rendered = render(experiences, skills, avoid[:MAX_AVOID], query.budget_tokens)
    if rendered.text:
        reason = None
    elif experiences or skills or avoid:
        reason = f"no relevant item fits in {query.budget_tokens} estimated tokens"
    else:
        reason = nothing_served or f"nothing cleared the relevance floor {floor_text(policy)}"
    omitted = rendered.omitted + max(0, len(avoid) - MAX_AVOID)
    return _Composed(rendered, estimate_tokens(rendered.text), reason, omitted)


def _brief(
    policy: RelevancePolicy, query: BriefQuery, composed: _Composed, number: int | None
) -> Brief:
    rendered = composed.rendered
    return Brief(
        brief_id=None if number is None else format_id("brief", number),
        task=query.task,
        project=query.project,
        empty=not rendered.text,
        reason=composed.reason,
        experiences=rendered.experiences,
        avoid_commands=rendered.avoid,
        skills=rendered.skills,
        omitted=composed.omitted,
        text=rendered.text,
        tokens_estimate=composed.tokens,
        budget_tokens=query.budget_tokens,
        relevance_floor=floor(policy),
    )


def compose_brief(
    conn: sqlite3.Connection, policy: RelevancePolicy, query: BriefQuery, *, record: bool = True
) -> Brief:
    """Compose the brief for ``query`` and, with ``record``, record it (in the caller's write
    transaction); an unrecorded brief has no id."""
    composed = _compose(conn, policy, query)
    return _brief(policy, query, composed, _insert(conn, query, composed) if record else None)


def _recorded(db: Database, policy: RelevancePolicy, query: BriefQuery) -> Brief:
    """Compose the brief in a read transaction, then record it in a short write transaction.

    A read transaction does not hold the store's write lock, so the ranking (most of a
    ``prepare``) runs beside other calls and other processes' writes; only the brief's insert
    waits for the lock. The brief is composed from one consistent snapshot of the store and
    recorded as composed: a commit by another call in between (another brief, a record) is
    not in it, as if this call had run just before that one. Term counts behind the newest
    experience are folded first, in a write transaction of their own (a retrieval needs them
    exact; a read transaction does not write).
    """

    def compose(conn: sqlite3.Connection) -> _Composed | None:
        return None if term_counts_behind(conn) else _compose(conn, policy, query)

    composed = db.read(compose)
    if composed is None:
        db.write(lambda conn: fold_term_counts(conn, force=True))
        composed = db.read(compose)
    if composed is None:  # recorded meanwhile, again: composed under the write lock
        return db.write(lambda conn: compose_brief(conn, policy, query))
    early = composed
    return db.write(lambda conn: _brief(policy, query, early, _insert(conn, query, early)))


def prepare(db: Database, policy: RelevancePolicy, request: PrepareRequest) -> Brief:
    """Brief ``request``'s task (task and project redacted, as everything stored is)."""
    red = Redactor()
    task = red(request.task)
    query = BriefQuery(
        task,
        red.optional(request.project),
        request.include_skills,
        request.budget_tokens,
        vector=query_vector(db, policy, task),
    )
    if not _RECORD_BRIEFS.get():
        return db.read(lambda conn: compose_brief(conn, policy, query, record=False))
    try:
        return _recorded(db, policy, query)
    except PreflightError:
        if not db.read_only:
            raise
    # A read-only store still briefs: the brief is composed as usual but cannot be recorded.
    return db.read(lambda conn: compose_brief(conn, policy, query, record=False))
