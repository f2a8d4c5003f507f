"""The embedded memory store: a thin facade over the database and one module per aggregate.

Most operations are a function of one aggregate module taking the database (and the relevance
policy, for those that rank); the facade binds them to its database in one line each, so their
request and result types come from those functions.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from lorelab.memory import (
    _briefs,
    _dreams,
    _experiences,
    _items,
    _lessons,
    _locks,
    _plans,
    _proposals,
    _skills,
    _validity,
    _vectors,
)
from lorelab.memory._db import BUSY_DEADLINE_SECONDS, Database
from lorelab.memory._embedding import MODEL_ID
from lorelab.memory._models import RecordRequest, RecordResult
from lorelab.memory._relevance import DEFAULT_POLICY, RelevancePolicy
from lorelab.memory._requests import RecordManyRequest, SnapshotRequest, SnapshotResult
from lorelab.memory._retrieval_models import ReindexRequest, ReindexResult

Req = TypeVar("Req")
Res = TypeVar("Res")


def _on_db(operation: Callable[[Database, Req], Res]) -> Callable[[SqliteMemoryStore, Req], Res]:
    """A store method that runs ``operation`` on the store's database."""

    def method(self: SqliteMemoryStore, request: Req) -> Res:
        return operation(self._db, request)

    method.__doc__ = operation.__doc__
    return method


def _ranked(
    operation: Callable[[Database, RelevancePolicy, Req], Res],
) -> Callable[[SqliteMemoryStore, Req], Res]:
    """A store method that runs ``operation`` on the store's database under its policy."""

    def method(self: SqliteMemoryStore, request: Req) -> Res:
        return operation(self._db, self.policy, request)

    method.__doc__ = operation.__doc__
    return method


class SqliteMemoryStore:
    """The embedded :class:`~lorelab.memory.MemoryStore`: one SQLite file (WAL, FTS5).

    One instance may be shared between threads (calls are serialised); several processes may
    open the same file at once. Every operation takes one request and returns one result.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        policy: RelevancePolicy = DEFAULT_POLICY,
        busy_deadline_seconds: float = BUSY_DEADLINE_SECONDS,
        create: bool = True,
    ) -> None:
        self.policy = policy
        self._db = Database(path, busy_deadline_seconds=busy_deadline_seconds, create=create)

    @property
    def location(self) -> Path:
        return self._db.path

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for inspection in tests and tools (read-only use)."""
        return self._db.conn

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # experiences
    def record(self, request: RecordRequest) -> RecordResult:
        return self.record_many(RecordManyRequest(experiences=[request])).results[0]

    record_many = _on_db(_experiences.record_many)
    verified_experiences = _on_db(_experiences.verified_experiences)

    # briefs
    prepare = _ranked(_briefs.prepare)

    # retrieval: validity, feedback, explanations, vectors
    update_validity = _on_db(_validity.update_validity)
    feedback = _on_db(_validity.add_feedback)
    explain = _ranked(_validity.explain)

    def reindex(
        self, request: ReindexRequest, progress: Callable[[int], None] | None = None
    ) -> ReindexResult:
        """Vectors for every item without one; ``progress(n)`` after each batch of n."""
        done = _vectors.reindex(self._db, progress or (lambda count: None))
        return ReindexResult(model=MODEL_ID, experiences=done.experiences, lessons=done.lessons)

    def missing_vectors(self) -> int:
        """How many experiences and lessons have no vector yet (what reindex would do)."""
        counts = _vectors.missing_counts(self._db)
        return counts.experiences + counts.lessons

    # skills and plans
    promote_skill = _on_db(_skills.promote_skill)
    skills = _on_db(_skills.list_skills)
    start = _ranked(_plans.start)
    report_outcome = _on_db(_plans.report_outcome)
    skill_health = _on_db(_plans.skill_health)

    # dreams and candidates
    dream = _on_db(_dreams.dream)
    add_proposed_candidates = _on_db(_proposals.add_proposed_candidates)
    candidate = _on_db(_dreams.candidate)
    check_candidate = _on_db(_dreams.check_candidate)
    promote_candidate = _on_db(_dreams.promote_candidate)

    # items
    list_items = _on_db(_items.list_items)
    show = _on_db(_items.show)

    # evaluation locks
    set_evaluation_lock = _on_db(_locks.set_lock)
    clear_evaluation_lock = _on_db(_locks.clear_lock)
    evaluation_locks = _on_db(_locks.list_locks)

    # lessons
    add_lesson = _on_db(_lessons.add_lesson)
    search_lessons = _on_db(_lessons.search_lessons)
    list_lessons = _on_db(_lessons.list_lessons)
    get_lesson = _on_db(_lessons.get_lesson)

    # snapshot
    def snapshot(self, request: SnapshotRequest) -> SnapshotResult:
        digest = self._db.snapshot(request.path)
        return SnapshotResult(
            path=str(Path(request.path)), sha256=digest, source=str(self._db.path)
        )
