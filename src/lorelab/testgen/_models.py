"""The records TestLore writes: historical examples, recalled lessons, generations, validations."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from lorelab._model import TEST_PATHS, ReceiptModel, RecordModel, RunnerName
from lorelab.errors import PathError
from lorelab.runners import Execution, Stability
from lorelab.workers import RoleReceipt
from lorelab.workers.roles import Case
from lorelab.workspace import FileEntry, check_distinct


class HistoricalExample(RecordModel):
    """A past specification with its tests, as ``lorelab tests learn`` reads it."""

    schema_version: Literal[1] = Field(default=1, description="Always 1.")
    id: str = Field(min_length=1, max_length=120, description="The lesson id to store it under.")
    specification_id: str = Field(min_length=1, max_length=120, description="The specification.")
    requirements: str = Field(min_length=1, description="The specification's requirements text.")
    runner: RunnerName = Field(default="pytest", description="The runner its tests are for.")
    files: list[FileEntry] = Field(min_length=1, description="The source files under test.")
    tests: list[FileEntry] = Field(
        min_length=1,
        description="The test files to validate: tests/test_<name>.py (pytest) or "
        "test/<name>.test.js (node); no conftest or configuration.",
    )

    @model_validator(mode="after")
    def _paths(self) -> HistoricalExample:
        pattern = TEST_PATHS[self.runner]
        for entry in self.tests:
            if not pattern.fullmatch(entry.path):
                raise ValueError(f"tests: {entry.path!r} is not a {self.runner} test path")
        for entry in self.files:
            if pattern.fullmatch(entry.path) or entry.path.rsplit("/", 1)[-1] == "conftest.py":
                raise ValueError(f"files: {entry.path!r} is a test or conftest file, not source")
        try:
            check_distinct([entry.path for entry in [*self.files, *self.tests]])
        except PathError as exc:
            raise ValueError(str(exc)) from None
        return self


class ExampleValidation(RecordModel):
    """Whether a historical example's tests pass, stably, against its own source."""

    valid: bool = Field(description="Collected, passing and stable in every run.")
    reason: str = Field(description="One line: why it is valid or not.")
    stability: Stability = Field(description="Every execution of the example's tests.")


class LearnResult(RecordModel):
    """What ``lorelab tests learn`` did with one example."""

    lesson_id: str | None = Field(description="The stored lesson's id; null when refused.")
    validation: ExampleValidation


class RecalledLesson(RecordModel):
    """A lesson that cleared the recall floor for one set of requirements."""

    id: str
    specification_id: str | None
    score: float = Field(description="BM25 score from the store (higher is more relevant).")
    shared_terms: list[str] = Field(description="Informative terms shared with the requirements.")
    requirements: str
    tests: list[FileEntry]


class Recall(RecordModel):
    """The result of one recall: what cleared the floor and what was turned away."""

    lessons: list[RecalledLesson]
    below_floor: list[str] = Field(description="Ids of lessons ranked but below the floor.")
    retrieval_ms: int = Field(description="Milliseconds spent recalling.")


GenerationStatus = Literal["approved", "rejected", "failed", "refused"]


class Review(RecordModel):
    """The reviewer's verdict."""

    verdict: Literal["approve", "reject"]
    reasons: list[str]


class Generation(RecordModel):
    """Three role calls (architect, author, reviewer) and what came of them."""

    status: GenerationStatus = Field(
        description=(
            "approved; rejected (by the reviewer); failed (a call failed or was invalid); "
            "refused (the caller's guard stopped a payload before it was sent)."
        )
    )
    reason: str | None = Field(description="Why the generation ended early; null if approved.")
    memory: bool = Field(description="Whether lessons could be offered (memory arm).")
    lessons_recalled: list[str] = Field(description="Ids of lessons recalled for this task.")
    lessons_reached_author: list[str] = Field(
        description="Ids of lessons in the payload of an author call that was actually spawned."
    )
    roles: list[RoleReceipt] = Field(description="Every role receipt, in call order.")
    plan: list[Case] | None = Field(description="The architect's planned cases, if any.")
    files: list[FileEntry] | None = Field(description="The author's test files, if any.")
    review: Review | None = Field(description="The reviewer's verdict, if it answered.")
    generation_ms: int = Field(description="Milliseconds for the three calls.")


CaseVerdictStatus = Literal["passed", "failed", "error", "skipped", "flaky", "order-dependent"]


class CaseVerdict(RecordModel):
    """One generated case after candidate validation."""

    id: str
    status: CaseVerdictStatus = Field(
        description=(
            "passed in every forward run and the reverse run; failed/error/skipped in every "
            "run; flaky: differed between forward runs; order-dependent: stable forward, "
            "different in the reverse run."
        )
    )


class CandidateValidation(RecordModel):
    """Candidate validation of generated tests against the unmodified source."""

    valid: bool = Field(description="Every check passed; only then may anything be applied.")
    reason: str = Field(description="One line: the first check that failed, or 'valid'.")
    path_violations: list[str] = Field(description="Paths refused by the path policy.")
    stability: Stability | None = Field(description="The forward runs; null if never run.")
    reverse: Execution | None = Field(description="The reverse-order run; null if never run.")
    cases: list[CaseVerdict] = Field(description="Every case, judged.")
    validation_ms: int = Field(description="Milliseconds spent validating.")


class ApplyResult(RecordModel):
    """What was (or, in a dry run, would be) written into the project."""

    applied: bool = Field(description="Whether files were written.")
    dry_run: bool
    written: list[str] = Field(description="Paths written (or that would be written).")
    dropped_cases: list[str] = Field(description="Cases dropped by --keep-passing.")
    kept_validation: CandidateValidation | None = Field(
        description="Validation of the kept subset after --keep-passing dropped cases."
    )
    reason: str


class GenerateResult(ReceiptModel):
    """The whole record of ``lorelab tests generate``."""

    runner: RunnerName
    agent: list[str]
    reviewer_agent: list[str] | None = Field(
        description="The reviewer's argv when it is not the author's worker; null otherwise."
    )
    recall: Recall | None = Field(description="Null without memory.")
    generation: Generation
    validation: CandidateValidation | None
    apply: ApplyResult | None
