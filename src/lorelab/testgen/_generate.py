"""Generation: exactly three role calls (architect, author, reviewer) through the transport.

The architect and the author see the recalled lessons; the reviewer never does. A failed,
invalid, oversize or timed-out call, or a rejection, ends the generation with its reason.
Nothing is retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lorelab._model import RunnerName
from lorelab.testgen._models import Generation, GenerationStatus, RecalledLesson, Review
from lorelab.workers import RoleReceipt, WorkerBounds, WorkerIdentity, call_worker
from lorelab.workers.roles import PROTOCOL, Case
from lorelab.workspace import FileEntry

DEFAULT_MAX_CASES: Final = 20
DEFAULT_MAX_FILES: Final = 4


@dataclass(frozen=True, slots=True)
class GenerationTask:
    """What the three roles are asked to test."""

    requirements: str
    runner: RunnerName
    source: tuple[FileEntry, ...]
    specification_id: str | None = None


@dataclass(frozen=True, slots=True)
class CallSettings:
    """How every role call is made: the same for both arms of an evaluation."""

    agent: tuple[str, ...]
    cwd: Path
    identity: WorkerIdentity | None
    bounds: WorkerBounds
    max_cases: int = DEFAULT_MAX_CASES
    max_files: int = DEFAULT_MAX_FILES
    allow_conftest: bool = False
    # A separate reviewer keeps review independent of an author that cannot review (Pynguin).
    reviewer_agent: tuple[str, ...] | None = None
    reviewer_identity: WorkerIdentity | None = None
    # A separate architect: a worker that plans but cannot write tests (the static worker).
    architect_agent: tuple[str, ...] | None = None
    architect_identity: WorkerIdentity | None = None


def _task_json(task: GenerationTask) -> dict[str, Any]:
    return {
        "specificationId": task.specification_id,
        "requirements": task.requirements,
        "runner": task.runner,
        "source": [entry.model_dump() for entry in task.source],
    }


def _lesson_json(lesson: RecalledLesson) -> dict[str, Any]:
    return {
        "id": lesson.id,
        "specificationId": lesson.specification_id,
        "requirements": lesson.requirements,
        "tests": [entry.model_dump() for entry in lesson.tests],
        "score": lesson.score,
    }


class _Refused(Exception):
    """A payload stopped by the caller's guard before it reached the transport."""


@dataclass(slots=True)
class _Session:
    """One generation's calls, in order, and what they produced so far."""

    task: GenerationTask
    lessons: Sequence[RecalledLesson] | None
    settings: CallSettings
    sent: list[dict[str, Any]] | None
    guard: Callable[[str, dict[str, Any]], str | None] | None
    received: list[dict[str, Any] | None] | None = None
    started: float = field(default_factory=time.perf_counter)
    receipts: list[RoleReceipt] = field(default_factory=list)
    plan: list[Case] | None = None
    files: list[FileEntry] | None = None
    reached: list[str] = field(default_factory=list)

    @property
    def offered(self) -> list[RecalledLesson]:
        return list(self.lessons or [])

    def call(self, role: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        refusal = self.guard(role, payload) if self.guard is not None else None
        if refusal is not None:
            raise _Refused(f"the {role} payload was refused before it was sent: {refusal}")
        if self.sent is not None:
            self.sent.append(payload)
        settings = self.settings
        agent, identity = settings.agent, settings.identity
        if role == "reviewer" and settings.reviewer_agent:
            agent, identity = settings.reviewer_agent, settings.reviewer_identity
        elif role == "architect" and settings.architect_agent:
            agent, identity = settings.architect_agent, settings.architect_identity
        result = call_worker(
            list(agent),
            role,
            payload,
            cwd=settings.cwd,
            bounds=settings.bounds,
            identity=identity,
        )
        self.receipts.append(result.receipt)
        if self.received is not None:
            self.received.append(result.response)
        return result.response

    def finish(
        self, status: GenerationStatus, reason: str | None, review: Review | None = None
    ) -> Generation:
        return Generation(
            status=status,
            reason=reason,
            memory=self.lessons is not None,
            lessons_recalled=[lesson.id for lesson in self.offered],
            lessons_reached_author=self.reached,
            roles=self.receipts,
            plan=self.plan,
            files=self.files,
            review=review,
            generation_ms=int((time.perf_counter() - self.started) * 1000),
        )

    def failed(self, role: str) -> Generation:
        receipt = self.receipts[-1]
        return self.finish(
            "failed", f"{role} call failed ({receipt.failure}): {receipt.failure_detail}"
        )

    def run(self) -> Generation:
        settings = self.settings
        lesson_payload = [_lesson_json(lesson) for lesson in self.offered]
        task_payload = _task_json(self.task)
        architect = self.call(
            "architect",
            {
                "protocol": PROTOCOL,
                "role": "architect",
                "task": task_payload,
                "lessons": lesson_payload,
                "limits": {"maxCases": settings.max_cases},
            },
        )
        if architect is None:
            return self.failed("architect")
        self.plan = [Case.model_validate(case) for case in architect["cases"]]
        author = self.call(
            "author",
            {
                "protocol": PROTOCOL,
                "role": "author",
                "task": task_payload,
                "lessons": lesson_payload,
                "plan": {"cases": [case.model_dump(by_alias=True) for case in self.plan]},
                "limits": {
                    "maxFiles": settings.max_files,
                    "maxCases": settings.max_cases,
                    "allowConftest": settings.allow_conftest,
                },
            },
        )
        if self.receipts[-1].spawned:
            self.reached = [lesson.id for lesson in self.offered]
        if author is None:
            return self.failed("author")
        self.files = [FileEntry.model_validate(entry) for entry in author["files"]]
        return self.review(task_payload, self.files)

    def review(self, task_payload: dict[str, Any], files: list[FileEntry]) -> Generation:
        reviewer = self.call(
            "reviewer",
            {
                "protocol": PROTOCOL,
                "role": "reviewer",
                "task": task_payload,
                "tests": [entry.model_dump() for entry in files],
            },
        )
        if reviewer is None:
            return self.failed("reviewer")
        review = Review(verdict=reviewer["verdict"], reasons=list(reviewer["reasons"]))
        if review.verdict != "approve":
            reasons = "; ".join(review.reasons) or "no reason given"
            return self.finish("rejected", f"reviewer rejected the tests: {reasons}", review)
        return self.finish("approved", None, review)


def generate(
    task: GenerationTask,
    lessons: Sequence[RecalledLesson] | None,
    settings: CallSettings,
    *,
    sent: list[dict[str, Any]] | None = None,
    guard: Callable[[str, dict[str, Any]], str | None] | None = None,
    received: list[dict[str, Any] | None] | None = None,
) -> Generation:
    """Run architect, author and reviewer once each; ``lessons`` is None without memory.

    Every payload actually handed to the transport is appended to ``sent`` when given, so a
    caller can prove what did (and did not) reach the worker. ``guard`` sees each payload
    first; a reason it returns stops the generation (status ``refused``) before that call.
    ``received`` gets each call's parsed response (None when the call failed), in call order.
    """
    session = _Session(task, lessons, settings, sent, guard, received=received)
    try:
        return session.run()
    except _Refused as exc:
        return session.finish("refused", str(exc))
