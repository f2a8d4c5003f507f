"""Learning: a historical example becomes a lesson only after its tests pass, stably."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from lorelab.errors import UsageError
from lorelab.io import read_model, sha256_bytes
from lorelab.memory import AddLessonRequest, LessonsRequest, MemoryStore
from lorelab.runners import get_runner, run_stability
from lorelab.testgen._models import ExampleValidation, HistoricalExample, LearnResult
from lorelab.workspace import FileEntry, RunRoot

DEFAULT_LEARN_RUNS: Final = 5
DEFAULT_TIMEOUT_S: Final = 60.0


def files_digest(files: list[FileEntry]) -> str:
    """SHA-256 over the sorted paths and contents of ``files``."""
    parts = [f"{entry.path}\0{entry.content}\0" for entry in sorted(files, key=lambda e: e.path)]
    return sha256_bytes("".join(parts).encode("utf-8"))


def read_example(path: str | os.PathLike[str]) -> HistoricalExample:
    """Read a historical example file (bounded, strict JSON, validated)."""
    return read_model(path, HistoricalExample, "manifest")


def validate_example(
    example: HistoricalExample,
    root: RunRoot,
    *,
    runs: int = DEFAULT_LEARN_RUNS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    plugin_autoload: bool = True,
) -> ExampleValidation:
    """Run the example's tests against its own source ``runs`` times in a disposable project."""
    project = root.create_project(f"example-{len(root.projects)}", [*example.files, *example.tests])
    runner = get_runner(example.runner, plugin_autoload=plugin_autoload, sandbox=True)
    stability = run_stability(runner, project, runs=runs, timeout_s=timeout_s)
    if not stability.stable:
        reason = f"unstable: {stability.first_difference}"
    elif stability.classification != "passed":
        reason = f"{stability.classification}: {stability.runs[0].reason}"
    else:
        cases = stability.runs[0].cases
        # A skipped or xfail case ran nothing: a lesson's tests must all have passed, as
        # candidate validation demands of generated tests.
        not_passing = [case for case in cases if case.status != "passed"]
        if not not_passing:
            return ExampleValidation(
                valid=True,
                reason=f"{len(cases)} cases passed in each of {runs} runs",
                stability=stability,
            )
        first = not_passing[0]
        reason = f"not every case passed: {first.id} is {first.status}" + (
            f" (and {len(not_passing) - 1} more)" if len(not_passing) > 1 else ""
        )
    return ExampleValidation(valid=False, reason=reason, stability=stability)


def lesson_request(
    example: HistoricalExample, runs: int, details: Mapping[str, Any]
) -> AddLessonRequest:
    """The request that stores ``example`` as a lesson whose tests passed in ``runs`` runs.

    Its validation record names the runner and the runs, then ``details`` in their order.
    """
    return AddLessonRequest(
        lesson_id=example.id,
        specification_id=example.specification_id,
        requirements=example.requirements,
        files=list(example.files),
        tests=list(example.tests),
        validation={"runner": example.runner, "runs": runs, **details},
    )


def check_new_lesson(store: MemoryStore, lesson_id: str) -> None:
    """Refuse (before anything runs) a lesson id the store already holds."""
    if any(lesson.id == lesson_id for lesson in store.list_lessons(LessonsRequest()).lessons):
        raise UsageError(f"lesson {lesson_id!r} already exists in the store; lessons are kept")


def learn(
    store: MemoryStore,
    example: HistoricalExample,
    root: RunRoot,
    *,
    runs: int = DEFAULT_LEARN_RUNS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> LearnResult:
    """Validate ``example`` and, only if it is valid, store it as a lesson."""
    check_new_lesson(store, example.id)
    validation = validate_example(example, root, runs=runs, timeout_s=timeout_s)
    if not validation.valid:
        return LearnResult(lesson_id=None, validation=validation)
    added = store.add_lesson(
        lesson_request(
            example,
            runs,
            {
                "cases": [case.id for case in validation.stability.runs[0].cases],
                "sourceSha256": files_digest(list(example.files)),
                "testsSha256": files_digest(list(example.tests)),
            },
        )
    )
    return LearnResult(lesson_id=added.id, validation=validation)
