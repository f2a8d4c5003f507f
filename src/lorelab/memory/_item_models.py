"""The memory's item views: each kind of stored item as ``show`` and ``list`` return it.

Split from :mod:`lorelab.memory._models` (the requests and results of the operations), which
it builds on and which never imports it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from lorelab._model import InputModel, OutputModel
from lorelab.memory._models import (
    QA,
    Candidate,
    ExperienceTrust,
    ItemKind,
    Outcome,
    Skill,
    SkillStep,
)
from lorelab.workspace import FileEntry


class StoredVerification(OutputModel):
    """A verification as stored (read back without the input bounds older versions lacked)."""

    command: str
    exit_code: int
    output_digest: str | None


class StoredCommand(OutputModel):
    """A command as stored, with its exit code."""

    command: str
    exit_code: int


class Provenance(OutputModel):
    host: str | None
    model: str | None
    created_at: str
    recorded_by: str | None = Field(
        default=None,
        description="The name of the `lorelab serve` token that recorded it; null: no token.",
    )
    verification: StoredVerification


class Experience(OutputModel):
    kind: Literal["experience"] = "experience"
    id: str
    task: str
    task_id: str | None
    summary: str
    outcome: Outcome
    trust: ExperienceTrust
    qa: QA
    steps: list[str]
    commands: list[StoredCommand]
    files: list[str]
    project: str | None
    plan_id: str | None
    skill_id: str | None
    provenance: Provenance
    redactions: dict[str, int]
    validity: str = "trusted"
    validity_reason: str | None = None


class PlanOutcome(OutputModel):
    passed: bool
    rework_count: int
    reported_at: str


class Plan(OutputModel):
    kind: Literal["plan"] = "plan"
    id: str
    skill_id: str
    task: str
    project: str | None
    score: float
    steps: list[SkillStep]
    brief_id: str | None
    created_at: str
    outcome: PlanOutcome | None


class BriefRecord(OutputModel):
    kind: Literal["brief"] = "brief"
    id: str
    task: str
    project: str | None
    empty: bool
    experience_ids: list[str]
    skill_ids: list[str]
    tokens_estimate: int
    budget_tokens: int
    plan_id: str | None
    text: str
    created_at: str


class EvaluationLock(OutputModel):
    kind: Literal["lock"] = "lock"
    evaluation_id: str
    holdout_tasks: list[str]
    active: bool
    created_at: str
    cleared_at: str | None


class Lesson(OutputModel):
    """A validated historical test suite for TestLore."""

    kind: Literal["lesson"] = "lesson"
    id: str
    specification_id: str | None
    requirements: str
    files: list[FileEntry]
    tests: list[FileEntry]
    validation: dict[str, Any]
    created_at: str


Item = Annotated[
    Experience | Skill | Plan | BriefRecord | Candidate | EvaluationLock | Lesson,
    Field(discriminator="kind"),
]


class ListRequest(InputModel):
    kind: ItemKind = "experience"
    limit: int = Field(default=50, ge=1, le=10000)


class ListResult(OutputModel):
    kind: ItemKind
    total: int
    items: list[Item]


class ShowRequest(InputModel):
    id: str


class ShowResult(OutputModel):
    item: Item
