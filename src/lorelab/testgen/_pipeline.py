"""``lorelab tests generate`` end to end: recall, three roles, candidate validation, apply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lorelab._model import RunnerName
from lorelab.errors import OutputExistsError
from lorelab.memory import open_store, store_path
from lorelab.runners import is_test_file
from lorelab.testgen._apply import apply_tests
from lorelab.testgen._generate import CallSettings, GenerationTask, generate
from lorelab.testgen._models import (
    ApplyResult,
    CandidateValidation,
    GenerateResult,
    Generation,
    Recall,
)
from lorelab.testgen._project import read_project, select_sources
from lorelab.testgen._recall import DEFAULT_K, recall_lessons
from lorelab.testgen._validate import validate_candidates
from lorelab.workers import WorkerBounds, bind_identity
from lorelab.workers.transport import DEFAULT_BOUNDS
from lorelab.workspace import FileEntry, RunRoot


@dataclass(frozen=True, slots=True)
class GenerateOptions:
    """Everything ``lorelab tests generate`` was asked to do."""

    project: Path
    requirements: str
    sources: tuple[str, ...]
    agent: tuple[str, ...]
    runner: RunnerName
    memory: bool = True
    home: Path | None = None
    k: int = DEFAULT_K
    stability_runs: int = 5
    timeout_s: float = 60.0
    bounds: WorkerBounds = DEFAULT_BOUNDS
    keep_passing: bool = False
    dry_run: bool = False
    allow_conftest: bool = False
    operator_identity: str | None = None
    reviewer_agent: tuple[str, ...] | None = None


def _recall(options: GenerateOptions) -> Recall | None:
    if not options.memory:
        return None
    path = store_path(options.home, options.project)
    if not path.exists():
        # No store yet: memory is on but holds nothing; never create one as a side effect.
        return Recall(lessons=[], below_floor=[], retrieval_ms=0)
    store = open_store(options.home, options.project)
    try:
        return recall_lessons(store, options.requirements, options.k, runner=options.runner)
    finally:
        store.close()


def canonical_destination(runner: RunnerName, source: str) -> str | None:
    """Where tests of ``source`` go by convention (``tests/test_<m>.py``, ``test/<m>.test.js``);
    None for a file of another language."""
    stem = PurePosixPath(source).stem
    if runner == "pytest" and source.endswith(".py"):
        return f"tests/test_{stem}.py"
    if runner == "node" and source.endswith(".js"):
        return f"test/{stem}.test.js"
    return None


def refuse_taken_destinations(
    project: Path, runner: RunnerName, files: Sequence[FileEntry], sources: Sequence[FileEntry]
) -> None:
    """Refuse, before any worker call, when a source's conventional test file already exists:
    generated tests are never written over a file, so the calls could only be refused."""
    present = {entry.path for entry in files}
    taken = [
        path
        for entry in sources
        if (path := canonical_destination(runner, entry.path)) is not None and path in present
    ]
    if taken:
        raise OutputExistsError(
            f"{project}: {', '.join(taken)} already exists; generated tests never overwrite a "
            "file, so no worker was called (remove it, or generate into a fresh copy)"
        )


def _result(
    options: GenerateOptions,
    recall: Recall | None,
    generation: Generation,
    validation: CandidateValidation | None = None,
    applied: ApplyResult | None = None,
) -> GenerateResult:
    return GenerateResult(
        runner=options.runner,
        agent=list(options.agent),
        reviewer_agent=list(options.reviewer_agent) if options.reviewer_agent else None,
        recall=recall,
        generation=generation,
        validation=validation,
        apply=applied,
    )


def generate_for_project(options: GenerateOptions) -> GenerateResult:
    """Generate tests for a project; nothing touches it unless validation passes."""
    project_files = read_project(options.project)
    files = list(project_files.files)
    sources = select_sources(options.project, files, options.sources)
    refuse_taken_destinations(options.project, options.runner, files, sources)
    recall = _recall(options)
    with RunRoot() as root:
        worker_cwd = root.create_project("worker", files)
        identity = bind_identity(
            list(options.agent), cwd=worker_cwd, operator_identity=options.operator_identity
        )
        reviewer_identity = (
            bind_identity(
                list(options.reviewer_agent),
                cwd=worker_cwd,
                operator_identity=options.operator_identity,
            )
            if options.reviewer_agent is not None
            else None
        )
        generation = generate(
            GenerationTask(options.requirements, options.runner, sources),
            recall.lessons if recall is not None else None,
            CallSettings(
                agent=options.agent,
                cwd=worker_cwd,
                identity=identity,
                bounds=options.bounds,
                allow_conftest=options.allow_conftest,
                reviewer_agent=options.reviewer_agent,
                reviewer_identity=reviewer_identity,
            ),
        )
        if generation.status != "approved" or not generation.files:
            return _result(options, recall, generation)
        authored = generation.files

        # The project's own tests stay out: only the generated cases are run and judged.
        base = [entry for entry in files if not is_test_file(options.runner, entry.path)]

        def validate(name: str, tests: Sequence[FileEntry]) -> CandidateValidation:
            return validate_candidates(
                root,
                name,
                base,
                tests,
                existing=[entry.path for entry in files],
                runner=options.runner,
                runs=options.stability_runs,
                timeout_s=options.timeout_s,
                allow_conftest=options.allow_conftest,
            )[0]

        validation = validate("candidate", authored)
        applied = apply_tests(
            # The project the user named, read through its symlink above, is written the
            # same way: its real directory (no symlink is followed below it).
            options.project.resolve(),
            options.runner,
            authored,
            validation,
            keep=options.keep_passing,
            dry_run=options.dry_run,
            revalidate=lambda kept: validate("kept", kept),
        )
    return _result(options, recall, generation, validation, applied)
