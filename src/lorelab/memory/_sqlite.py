"""The embedded memory store: a thin facade over the database and one module per aggregate."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

# Opening a store needs only the database; each aggregate module is imported by the methods
# that use it, so a brief does not load the Dreams or the lessons, and `lorelab mcp` lists its
# tools before any of them is loaded.
from lorelab.memory._db import BUSY_DEADLINE_SECONDS, Database
from lorelab.memory._relevance import DEFAULT_POLICY, RelevancePolicy

if TYPE_CHECKING:
    from lorelab.memory._models import (
        Brief,
        Candidate,
        CheckRun,
        DreamRequest,
        DreamResult,
        EvaluationLock,
        Lesson,
        ListRequest,
        ListResult,
        OutcomeRequest,
        OutcomeResult,
        PrepareRequest,
        PromoteCandidateRequest,
        PromoteRequest,
        RecordRequest,
        RecordResult,
        ShowRequest,
        ShowResult,
        Skill,
        SkillHealthRequest,
        SkillHealthResult,
        StartRequest,
        StartResult,
    )
    from lorelab.memory._requests import (
        AddLessonRequest,
        AddLessonResult,
        CandidateCheckRequest,
        CandidateRequest,
        ExperiencesResult,
        LessonRequest,
        LessonSearchRequest,
        LessonSearchResult,
        LessonsRequest,
        LessonsResult,
        LockClearRequest,
        LockRequest,
        LocksRequest,
        LocksResult,
        ProposalsRequest,
        ProposalsResult,
        RecordManyRequest,
        RecordManyResult,
        SkillsRequest,
        SkillsResult,
        SnapshotRequest,
        SnapshotResult,
        VerifiedExperiencesRequest,
    )
    from lorelab.memory._retrieval_models import (
        ExplainRequest,
        ExplainResult,
        FeedbackRequest,
        FeedbackResult,
        ReindexRequest,
        ReindexResult,
        ValidityRequest,
        ValidityResult,
    )


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
        from lorelab.memory._requests import RecordManyRequest

        return self.record_many(RecordManyRequest(experiences=[request])).results[0]

    def record_many(self, request: RecordManyRequest) -> RecordManyResult:
        from lorelab.memory import _experiences

        return _experiences.record_many(self._db, request)

    def verified_experiences(self, request: VerifiedExperiencesRequest) -> ExperiencesResult:
        from lorelab.memory import _experiences

        return _experiences.verified_experiences(self._db, request)

    # briefs
    def prepare(self, request: PrepareRequest) -> Brief:
        from lorelab.memory import _briefs

        query = _briefs.prepare_query(request)
        return self._db.write(lambda conn: _briefs.compose_brief(conn, self.policy, query))

    # retrieval: validity, feedback, explanations, vectors
    def update_validity(self, request: ValidityRequest) -> ValidityResult:
        from lorelab.memory import _validity

        return _validity.update_validity(self._db, request)

    def feedback(self, request: FeedbackRequest) -> FeedbackResult:
        from lorelab.memory import _validity

        return _validity.add_feedback(self._db, request)

    def explain(self, request: ExplainRequest) -> ExplainResult:
        from lorelab.memory import _validity

        return _validity.explain(self._db, self.policy, request)

    def reindex(
        self, request: ReindexRequest, progress: Callable[[int], None] | None = None
    ) -> ReindexResult:
        """Vectors for every item without one; ``progress(n)`` after each batch of n."""
        from lorelab.memory import _vectors
        from lorelab.memory._embedding import MODEL_ID
        from lorelab.memory._retrieval_models import ReindexResult

        done = _vectors.reindex(self._db, progress or (lambda count: None))
        return ReindexResult(model=MODEL_ID, experiences=done.experiences, lessons=done.lessons)

    def missing_vectors(self) -> int:
        """How many experiences and lessons have no vector yet (what reindex would do)."""
        from lorelab.memory import _vectors

        counts = _vectors.missing_counts(self._db)
        return counts.experiences + counts.lessons

    # skills and plans
    def promote_skill(self, request: PromoteRequest) -> Skill:
        from lorelab.memory import _skills

        return _skills.promote_skill(self._db, request)

    def skills(self, request: SkillsRequest) -> SkillsResult:
        from lorelab.memory import _skills

        return _skills.list_skills(self._db, request)

    def start(self, request: StartRequest) -> StartResult:
        from lorelab.memory import _plans

        return _plans.start(self._db, self.policy, request)

    def report_outcome(self, request: OutcomeRequest) -> OutcomeResult:
        from lorelab.memory import _plans

        return _plans.report_outcome(self._db, request)

    def skill_health(self, request: SkillHealthRequest) -> SkillHealthResult:
        from lorelab.memory import _plans

        return _plans.skill_health(self._db, request)

    # dreams and candidates
    def dream(self, request: DreamRequest) -> DreamResult:
        from lorelab.memory import _dreams

        return _dreams.dream(self._db, request)

    def add_proposed_candidates(self, request: ProposalsRequest) -> ProposalsResult:
        from lorelab.memory import _proposals

        return _proposals.add_proposed_candidates(self._db, request)

    def candidate(self, request: CandidateRequest) -> Candidate:
        from lorelab.memory import _dreams

        return _dreams.candidate(self._db, request)

    def check_candidate(self, request: CandidateCheckRequest) -> CheckRun:
        from lorelab.memory import _dreams

        return _dreams.check_candidate(self._db, request)

    def promote_candidate(self, request: PromoteCandidateRequest) -> Skill:
        from lorelab.memory import _dreams

        return _dreams.promote_candidate(self._db, request)

    # items
    def list_items(self, request: ListRequest) -> ListResult:
        from lorelab.memory import _items

        return _items.list_items(self._db, request)

    def show(self, request: ShowRequest) -> ShowResult:
        from lorelab.memory import _items

        return _items.show(self._db, request)

    # evaluation locks
    def set_evaluation_lock(self, request: LockRequest) -> EvaluationLock:
        from lorelab.memory import _locks

        return _locks.set_lock(self._db, request)

    def clear_evaluation_lock(self, request: LockClearRequest) -> EvaluationLock:
        from lorelab.memory import _locks

        return _locks.clear_lock(self._db, request)

    def evaluation_locks(self, request: LocksRequest) -> LocksResult:
        from lorelab.memory import _locks

        return _locks.list_locks(self._db)

    # lessons
    def add_lesson(self, request: AddLessonRequest) -> AddLessonResult:
        from lorelab.memory import _lessons

        return _lessons.add_lesson(self._db, request)

    def search_lessons(self, request: LessonSearchRequest) -> LessonSearchResult:
        from lorelab.memory import _lessons

        return _lessons.search_lessons(self._db, request)

    def list_lessons(self, request: LessonsRequest) -> LessonsResult:
        from lorelab.memory import _lessons

        return _lessons.list_lessons(self._db)

    def get_lesson(self, request: LessonRequest) -> Lesson:
        from lorelab.memory import _lessons

        return _lessons.get_lesson(self._db, request)

    # snapshot
    def snapshot(self, request: SnapshotRequest) -> SnapshotResult:
        from lorelab.memory._requests import SnapshotResult

        digest = self._db.snapshot(request.path)
        return SnapshotResult(
            path=str(Path(request.path)), sha256=digest, source=str(self._db.path)
        )
