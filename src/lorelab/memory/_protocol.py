"""The one interface every memory store implements; callers depend on this, never on SQLite.

The embedded store is :class:`lorelab.memory.SqliteMemoryStore`; a team store (PostgreSQL)
implements the same protocol and reuses the storage-free parts (redaction, procedures, the
relevance policy, brief rendering).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from lorelab.memory._models import (
    Brief,
    Candidate,
    CandidateProposal,
    CheckRun,
    DreamRequest,
    DreamResult,
    EvaluationLock,
    Experience,
    Item,
    ItemKind,
    Lesson,
    ListResult,
    OutcomeRequest,
    OutcomeResult,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    ProposalOutcome,
    RecordRequest,
    RecordResult,
    Skill,
    SkillHealthResult,
    StartRequest,
    StartResult,
    WorkerProvenance,
)
from lorelab.workspace import FileEntry


@runtime_checkable
class MemoryStore(Protocol):
    """Verified memory for coding agents: experiences, briefs, Skills, plans, Dreams, lessons."""

    def record(self, request: RecordRequest) -> RecordResult:
        """Store one experience (secrets redacted); refused for a task under an active lock."""
        ...

    def record_many(self, requests: Sequence[RecordRequest]) -> list[RecordResult]:
        """Store several experiences in one transaction: all of them, or none."""
        ...

    def prepare(self, request: PrepareRequest) -> Brief:
        """Brief a new task with relevant trusted memory only; the brief is recorded."""
        ...

    def promote_skill(self, request: PromoteRequest) -> Skill:
        """Promote verified, QA-approved experiences sharing a procedure into a Skill."""
        ...

    def start(self, request: StartRequest) -> StartResult:
        """Plan a task with the best healthy Skill, or say why there is no plan."""
        ...

    def report_outcome(self, request: OutcomeRequest) -> OutcomeResult:
        """Record a plan's outcome (once) and update its Skill's health."""
        ...

    def skill_health(self, skill_id: str | None = None) -> SkillHealthResult:
        """Health of one Skill, or of all Skills."""
        ...

    def dream(self, request: DreamRequest) -> DreamResult:
        """Mine new candidate Skills from command sequences shared by verified experiences."""
        ...

    def verified_experiences(self, project: str | None, limit: int) -> list[Experience]:
        """The ``limit`` most recent verified experiences (of ``project``), newest first."""
        ...

    def add_proposed_candidates(
        self,
        proposals: Sequence[CandidateProposal],
        *,
        offered_ids: Sequence[str],
        provenance: WorkerProvenance,
    ) -> list[ProposalOutcome]:
        """Judge each worker proposal alone; store the sound ones as unchecked candidates.

        A proposal is refused (nothing stored for it) unless it names two or more distinct
        verified experiences among ``offered_ids``, has steps and checks, a valid and untaken
        Agent Skills name, a valid description, and steps that are no known procedure.
        """
        ...

    def check_candidate(
        self, candidate_id: str, project_dir: str | os.PathLike[str], timeout_seconds: float
    ) -> CheckRun:
        """Run a candidate's checks in a disposable copy of ``project_dir``; record the run."""
        ...

    def promote_candidate(self, request: PromoteCandidateRequest) -> Skill:
        """Promote a checked candidate into a trusted Skill."""
        ...

    def candidate(self, candidate_id: str) -> Candidate:
        """One candidate with its last check run."""
        ...

    def list_items(self, kind: ItemKind, limit: int = 50) -> ListResult:
        """The most recent items of one kind."""
        ...

    def show(self, item_id: str) -> Item:
        """One item by id (``exp-``, ``skill-``, ``plan-``, ``brief-``, ``cand-`` prefixes)."""
        ...

    def skills(self, include_review_required: bool = False) -> list[Skill]:
        """Every Skill, oldest first; review-required ones only when asked."""
        ...

    def set_evaluation_lock(
        self, evaluation_id: str, holdout_tasks: Sequence[str]
    ) -> EvaluationLock:
        """Refuse ``record`` for the holdout tasks until the lock is cleared."""
        ...

    def clear_evaluation_lock(self, evaluation_id: str) -> EvaluationLock:
        """Clear an active lock (it stays in the record, marked cleared)."""
        ...

    def evaluation_locks(self) -> list[EvaluationLock]:
        """Every lock, active and cleared."""
        ...

    def add_lesson(
        self,
        lesson_id: str,
        specification_id: str | None,
        requirements: str,
        files: list[FileEntry],
        tests: list[FileEntry],
        validation: dict[str, object],
    ) -> str:
        """Store one validated lesson for TestLore; returns its id."""
        ...

    def search_lessons(self, text: str, k: int) -> list[tuple[Lesson, float]]:
        """Lessons by BM25 over requirements and test names, higher is better, no floor."""
        ...

    def list_lessons(self) -> list[Lesson]:
        """Every lesson, oldest first."""
        ...

    def get_lesson(self, lesson_id: str) -> Lesson:
        """One lesson by id."""
        ...

    def snapshot(self, path: str | os.PathLike[str]) -> str:
        """Write a consistent copy of the store to a new file; returns its SHA-256."""
        ...

    @property
    def location(self) -> Path:
        """Where the store lives (a file path or a URL-like description)."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...
