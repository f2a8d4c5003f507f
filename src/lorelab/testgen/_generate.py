"""Generation: exactly three role calls (architect, author, reviewer) through the transport.

The architect and the author see the recalled lessons; the reviewer never does. A failed,
invalid, oversize or timed-out call, or a rejection, ends the generation with its reason.
Nothing is retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lorelab._model import RunnerName
from lorelab.testgen._models import Generation, RecalledLesson, Review
from lorelab.workers import RoleReceipt, WorkerIdentity, call_worker
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
    timeout_ms: int
    max_output_bytes: int
    max_cases: int = DEFAULT_MAX_CASES
    max_files: int = DEFAULT_MAX_FILES
    allow_conftest: bool = False
    # A separate reviewer keeps review independent of an author that cannot review (Pynguin).
    reviewer_agent: tuple[str, ...] | None = None
    reviewer_identity: WorkerIdentity | None = None


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


def generate(
    task: GenerationTask,
    lessons: Sequence[RecalledLesson] | None,
    settings: CallSettings,
    *,
    sent: list[dict[str, Any]] | None = None,
    guard: Callable[[str, dict[str, Any]], str | None] | None = None,
) -> Generation:
    """Run architect, author and reviewer once each; ``lessons`` is None without memory.

    Every payload actually handed to the transport is appended to ``sent`` when given, so a
    caller can prove what did (and did not) reach the worker. ``guard`` sees each payload
    first; a reason it returns stops the generation (status ``refused``) before that call.
    """
    started = time.perf_counter()
    offered = list(lessons or [])
    lesson_payload = [_lesson_json(lesson) for lesson in offered]
    task_payload = _task_json(task)
    receipts: list[RoleReceipt] = []
    plan: list[Case] | None = None
    files: list[FileEntry] | None = None
    reached: list[str] = []

    def call(role: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        refusal = guard(role, payload) if guard is not None else None
        if refusal is not None:
            raise _Refused(f"the {role} payload was refused before it was sent: {refusal}")
        if sent is not None:
            sent.append(payload)
        reviewer = settings.reviewer_agent if role == "reviewer" else None
        result = call_worker(
            list(reviewer or settings.agent),
            role,
            payload,
            cwd=settings.cwd,
            timeout_ms=settings.timeout_ms,
            max_output_bytes=settings.max_output_bytes,
            identity=settings.reviewer_identity if reviewer else settings.identity,
        )
        receipts.append(result.receipt)
        return result.response

    def finish(status: str, reason: str | None, review: Review | None = None) -> Generation:
        return Generation(
            status=status,  # type: ignore[arg-type]
            reason=reason,
            memory=lessons is not None,
            lessons_recalled=[lesson.id for lesson in offered],
            lessons_reached_author=reached,
            roles=receipts,
            plan=plan,
            files=files,
            review=review,
            generation_ms=int((time.perf_counter() - started) * 1000),
        )

    def failed(role: str) -> Generation:
        receipt = receipts[-1]
        return finish("failed", f"{role} call failed ({receipt.failure}): {receipt.failure_detail}")

    try:
        architect = call(
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
            return failed("architect")
        plan = [Case.model_validate(case) for case in architect["cases"]]

        author = call(
            "author",
            {
                "protocol": PROTOCOL,
                "role": "author",
                "task": task_payload,
                "lessons": lesson_payload,
                "plan": {"cases": [case.model_dump(by_alias=True) for case in plan]},
                "limits": {
                    "maxFiles": settings.max_files,
                    "maxCases": settings.max_cases,
                    "allowConftest": settings.allow_conftest,
                },
            },
        )
        if receipts[-1].spawned:
            reached = [lesson.id for lesson in offered]
        if author is None:
            return failed("author")
        files = [FileEntry.model_validate(entry) for entry in author["files"]]

        reviewer = call(
            "reviewer",
            {
                "protocol": PROTOCOL,
                "role": "reviewer",
                "task": task_payload,
                "tests": [entry.model_dump() for entry in files],
            },
        )
        if reviewer is None:
            return failed("reviewer")
        review = Review(verdict=reviewer["verdict"], reasons=list(reviewer["reasons"]))
        if review.verdict != "approve":
            reasons = "; ".join(review.reasons) or "no reason given"
            return finish("rejected", f"reviewer rejected the tests: {reasons}", review)
        return finish("approved", None, review)
    except _Refused as exc:
        return finish("refused", str(exc))
