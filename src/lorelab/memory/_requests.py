"""Requests and results of the store operations that agents do not call directly.

Batches, locks, lessons, worker proposals, candidate checks and snapshots: each store operation
takes one request model and returns one result model, like the operations in ``_models``.
"""

from typing import Any

from pydantic import Field

from lorelab._model import InputModel, OutputModel
from lorelab.memory._item_models import EvaluationLock, Experience, Lesson
from lorelab.memory._models import (
    CandidateProposal,
    ProposalOutcome,
    RecordRequest,
    RecordResult,
    Skill,
    WorkerProvenance,
)
from lorelab.workspace import FileEntry


class RecordManyRequest(InputModel):
    """Several experiences stored in one transaction: all of them, or none."""

    experiences: list[RecordRequest]


class RecordManyResult(OutputModel):
    results: list[RecordResult]


class VerifiedExperiencesRequest(InputModel):
    """The most recent verified experiences (of one project, or of all)."""

    project: str | None = None
    limit: int = Field(default=200, description="How many, newest first (1 to 5000).")


class ExperiencesResult(OutputModel):
    experiences: list[Experience]


class ProposalsRequest(InputModel):
    """A worker's candidate proposals, the experiences it was shown, and the call's provenance."""

    proposals: list[CandidateProposal]
    offered_ids: list[str]
    provenance: WorkerProvenance


class ProposalsResult(OutputModel):
    outcomes: list[ProposalOutcome]


class CandidateRequest(InputModel):
    candidate_id: str


class CandidateCheckRequest(InputModel):
    """Run a candidate's checks in a disposable copy of ``project_dir``."""

    candidate_id: str
    project_dir: str
    timeout_seconds: float = 60.0


class SkillsRequest(InputModel):
    include_review_required: bool = False


class SkillsResult(OutputModel):
    skills: list[Skill]


class LockRequest(InputModel):
    """Refuse ``record`` for the holdout tasks until the lock is cleared."""

    evaluation_id: str
    holdout_tasks: list[str]


class LockClearRequest(InputModel):
    evaluation_id: str


class LocksRequest(InputModel):
    """Every evaluation lock, active and cleared."""


class LocksResult(OutputModel):
    locks: list[EvaluationLock]


class AddLessonRequest(InputModel):
    """One validated lesson for TestLore."""

    lesson_id: str
    specification_id: str | None
    requirements: str
    files: list[FileEntry]
    tests: list[FileEntry]
    validation: dict[str, Any]


class AddLessonResult(OutputModel):
    id: str


class LessonSearchRequest(InputModel):
    text: str
    k: int


class LessonHit(OutputModel):
    lesson: Lesson
    score: float = Field(
        description="Fused relevance (reciprocal rank fusion of BM25 and cosine): higher is better."
    )


class LessonSearchResult(OutputModel):
    hits: list[LessonHit]


class LessonsRequest(InputModel):
    """Every lesson, oldest first."""


class LessonsResult(OutputModel):
    lessons: list[Lesson]


class LessonRequest(InputModel):
    lesson_id: str


class SnapshotRequest(InputModel):
    path: str = Field(description="The new file to write the copy to.")


class SnapshotResult(OutputModel):
    path: str
    sha256: str
    source: str


class SkillsExportRequest(InputModel):
    """Write each Skill as ``directory/<name>/SKILL.md``."""

    directory: str
    include_review_required: bool = False


class SkillsExportResult(OutputModel):
    paths: list[str] = Field(description="The SKILL.md files written.")
