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
    _reindex,
    _skills,
    _validity,
)
from lorelab.memory._db import BUSY_DEADLINE_SECONDS, Database
from lorelab.memory._embedders import Embedder, named, of_store
from lorelab.memory._models import RecordRequest, RecordResult
from lorelab.memory._relevance import DEFAULT_POLICY, RelevancePolicy
from lorelab.memory._requests import RecordManyRequest, SnapshotRequest, SnapshotResult
from lorelab.memory._retrieval_models import ReindexRequest, ReindexResult
from lorelab.memory._shared_vectors import SharedQueryVectors

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
        embedding_model: str | None = None,
    ) -> None:
        """``embedding_model`` (``minilm`` or ``wordllama``) is the model of a store this
        creates (default: ``$LORELAB_EMBEDDING_MODEL``, else ``minilm``); an existing store
        keeps its own (``reindex`` switches it)."""
        self.policy = policy
        chosen: Embedder | None = None
        if embedding_model is not None:
            chosen = named(embedding_model)
        self._db = Database(
            path,
            busy_deadline_seconds=busy_deadline_seconds,
            create=create,
            embedding_model=chosen,
        )

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
        """Vectors (of the request's model, else of the store's) for every item without one,
        then that model is the store's; ``progress(n)`` after each batch of n."""
        target = None if request.model is None else named(request.model)
        done = _reindex.reindex(self._db, progress or (lambda count: None), target)
        return ReindexResult(model=done.model, experiences=done.experiences, lessons=done.lessons)

    def missing_vectors(self, model: str | None = None) -> int:
        """How many experiences and lessons have no vector of ``model`` (default: the store's
        own) yet: what a reindex would compute."""
        target = None if model is None else named(model)
        counts = _reindex.missing_counts(self._db, target)
        return counts.experiences + counts.lessons

    @property
    def embedding_model(self) -> str:
        """The model id of the vectors this store uses."""
        return self._db.read(of_store).model_id

    def share_query_vectors(self, path: Path) -> None:
        """Read and keep query vectors in ``path``, shared with the other processes that serve
        this store (:mod:`lorelab.memory._shared_vectors`; a private file of this user)."""
        self._db.shared_queries = SharedQueryVectors(path)

    def remove_shared_query_vectors(self) -> None:
        """Stop sharing query vectors and delete their file (the server does when it stops)."""
        if self._db.shared_queries is not None:
            self._db.shared_queries.remove()

    def load_model(self) -> None:
        """Load the store's embedding model now (a server does before it accepts calls, so
        that no call pays the load)."""
        self._db.read(of_store).load()

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
