"""The one interface every memory store implements; callers depend on this, never on SQLite.

The embedded store is :class:`lorelab.memory.SqliteMemoryStore`; a team store (PostgreSQL)
implements the same protocol and reuses the storage-free parts (redaction, procedures, the
relevance policy, brief rendering). Every operation takes one request model and returns one
result model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from lorelab.memory._item_models import (
    EvaluationLock,
    Lesson,
    ListRequest,
    ListResult,
    ShowRequest,
    ShowResult,
)
from lorelab.memory._models import (
    Brief,
    Candidate,
    CheckRun,
    DreamRequest,
    DreamResult,
    OutcomeRequest,
    OutcomeResult,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    RecordRequest,
    RecordResult,
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


@runtime_checkable
class MemoryStore(Protocol):
    """Verified memory for coding agents: experiences, briefs, Skills, plans, Dreams, lessons."""

    def record(self, request: RecordRequest) -> RecordResult:
        """Store one experience (secrets redacted); refused for a task under an active lock."""
        ...

    def record_many(self, request: RecordManyRequest) -> RecordManyResult:
        """Store several experiences in one transaction: all of them, or none."""
        ...

    def verified_experiences(self, request: VerifiedExperiencesRequest) -> ExperiencesResult:
        """The most recent verified experiences (of one project), newest first."""
        ...

    def prepare(self, request: PrepareRequest) -> Brief:
        """Brief a new task with relevant trusted memory only; the brief is recorded."""
        ...

    def promote_skill(self, request: PromoteRequest) -> Skill:
        """Promote verified, QA-approved experiences sharing a procedure into a Skill."""
        ...

    def skills(self, request: SkillsRequest) -> SkillsResult:
        """Every Skill, oldest first; review-required ones only when asked."""
        ...

    def start(self, request: StartRequest) -> StartResult:
        """Plan a task with the best healthy Skill, or say why there is no plan."""
        ...

    def report_outcome(self, request: OutcomeRequest) -> OutcomeResult:
        """Record a plan's outcome (once) and update its Skill's health."""
        ...

    def skill_health(self, request: SkillHealthRequest) -> SkillHealthResult:
        """Health of one Skill, or of all Skills."""
        ...

    def dream(self, request: DreamRequest) -> DreamResult:
        """Mine new candidate Skills from command sequences shared by verified experiences."""
        ...

    def add_proposed_candidates(self, request: ProposalsRequest) -> ProposalsResult:
        """Judge each worker proposal alone; store the sound ones as unchecked candidates."""
        ...

    def candidate(self, request: CandidateRequest) -> Candidate:
        """One candidate with its last check run."""
        ...

    def check_candidate(self, request: CandidateCheckRequest) -> CheckRun:
        """Run a candidate's checks in a disposable copy of the project; record the run."""
        ...

    def promote_candidate(self, request: PromoteCandidateRequest) -> Skill:
        """Promote a checked candidate into a trusted Skill."""
        ...

    def list_items(self, request: ListRequest) -> ListResult:
        """The most recent items of one kind."""
        ...

    def show(self, request: ShowRequest) -> ShowResult:
        """One item by id (``exp-``, ``skill-``, ``plan-``, ``brief-``, ``cand-`` prefixes)."""
        ...

    def set_evaluation_lock(self, request: LockRequest) -> EvaluationLock:
        """Refuse ``record`` for the holdout tasks until the lock is cleared."""
        ...

    def clear_evaluation_lock(self, request: LockClearRequest) -> EvaluationLock:
        """Clear an active lock (it stays in the record, marked cleared)."""
        ...

    def evaluation_locks(self, request: LocksRequest) -> LocksResult:
        """Every lock, active and cleared."""
        ...

    def add_lesson(self, request: AddLessonRequest) -> AddLessonResult:
        """Store one validated lesson for TestLore."""
        ...

    def search_lessons(self, request: LessonSearchRequest) -> LessonSearchResult:
        """Lessons by BM25 and cosine fused (reciprocal rank fusion), higher is better, no floor."""
        ...

    def update_validity(self, request: ValidityRequest) -> ValidityResult:
        """Mark an experience or Skill trusted, superseded, contradicted or deprecated."""
        ...

    def feedback(self, request: FeedbackRequest) -> FeedbackResult:
        """Rate a served experience (helpful, ignored, misleading, harmful)."""
        ...

    def explain(self, request: ExplainRequest) -> ExplainResult:
        """Every candidate for a task with its scores and why it is served or withheld."""
        ...

    def reindex(
        self, request: ReindexRequest, progress: Callable[[int], None] | None = None
    ) -> ReindexResult:
        """Compute the vectors the store lacks; ``progress(n)`` after each batch."""
        ...

    def missing_vectors(self, model: str | None = None) -> int:
        """How many items have no vector of ``model`` (default: the store's) yet."""
        ...

    def list_lessons(self, request: LessonsRequest) -> LessonsResult:
        """Every lesson, oldest first."""
        ...

    def get_lesson(self, request: LessonRequest) -> Lesson:
        """One lesson by id."""
        ...

    def snapshot(self, request: SnapshotRequest) -> SnapshotResult:
        """Write a consistent copy of the store to a new file, with its SHA-256."""
        ...

    @property
    def location(self) -> Path:
        """Where the store lives (a file path or a URL-like description)."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...
