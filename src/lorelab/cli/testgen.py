"""``lorelab tests learn|lessons|generate``: TestLore's commands (added to ``lorelab tests``)."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.table import Table

from lorelab.cli._common import LorelabGroup, echo_json, exit_with, stdout_console
from lorelab.errors import InputFileError, OutputExistsError, UsageError
from lorelab.io import create_output_dir, read_bounded
from lorelab.memory import Lesson, LessonRequest, LessonsRequest, open_store, store_path
from lorelab.testgen import (
    DEFAULT_K,
    DEFAULT_LEARN_RUNS,
    GenerateOptions,
    GenerateResult,
    LearnResult,
    RunnerName,
    detect_runner,
    generate_for_project,
    learn,
    read_example,
    read_project,
    select_sources,
)
from lorelab.workers import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_MS,
    MAX_OUTPUT_BYTES_CAP,
    MAX_TIMEOUT_MS,
    resolve_agent,
)
from lorelab.workspace import RunRoot

_home = click.option(
    "--home",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Memory home: the store is HOME/memory.db (overrides $LORELAB_HOME).",
)
_runs_range = click.IntRange(2, 5)
_test_timeout_option = click.option(
    "--timeout-s",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Timeout of each test run in seconds; its whole process group is killed at it.",
)


def refuse_existing_output(output: Path | None) -> None:
    """Refuse an output path that exists before any work starts; it is created at the end."""
    if output is not None and os.path.lexists(output):
        raise OutputExistsError(f"{output}: output path already exists; choose a new directory")


def _learn_table(result: LearnResult) -> None:
    console = stdout_console()
    validation = result.validation
    table = Table(title="historical validation")
    for column in ("run", "classification", "cases", "ms"):
        table.add_column(column)
    for number, run in enumerate(validation.stability.runs, start=1):
        table.add_row(str(number), run.classification, str(len(run.cases)), str(run.duration_ms))
    console.print(table)
    if result.lesson_id:
        console.print(f"stored lesson {result.lesson_id}: {validation.reason}", markup=False)
    else:
        console.print(f"refused: {validation.reason}", markup=False)


@click.command(name="learn")
@click.argument("example", type=click.Path(path_type=Path, dir_okay=False))
@_home
@click.option(
    "--project",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Project whose .lorelab/memory.db stores the lesson (default: current directory).",
)
@click.option(
    "--stability-runs",
    type=_runs_range,
    default=DEFAULT_LEARN_RUNS,
    show_default=True,
    help="Runs of the example's tests that must agree before it becomes a lesson.",
)
@_test_timeout_option
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Fresh directory for the validation receipt (kept whether or not it is stored).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def learn_command(
    example: Path,
    home: Path | None,
    project: Path | None,
    stability_runs: int,
    timeout_s: float,
    output: Path | None,
    as_json: bool,
) -> None:
    """Validate a historical EXAMPLE (JSON) and store it as a lesson only if its tests pass.

    EXAMPLE is {schemaVersion: 1, id, specificationId, requirements, runner, files, tests}.
    Exit 0 when stored, 1 when the tests did not pass stably (the executions are reported).
    """
    parsed = read_example(example)
    refuse_existing_output(output)
    store = open_store(home, project)
    try:
        with RunRoot() as root:
            result = learn(store, parsed, root, runs=stability_runs, timeout_s=timeout_s)
    finally:
        store.close()
    if output is not None:
        create_output_dir(output).write_json("learn.json", result)
    if as_json:
        echo_json(result)
    else:
        _learn_table(result)
    exit_with(0 if result.lesson_id else 1)


@click.group(name="lessons", cls=LorelabGroup)
def lessons_group() -> None:
    """List and show the lessons in the memory store."""


@lessons_group.command(name="list")
@_home
@click.option("--project", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True)
def lessons_list(home: Path | None, project: Path | None, as_json: bool) -> None:
    """List every lesson, oldest first (an absent store lists nothing and is not created)."""
    lessons: list[Lesson] = []
    if store_path(home, project).exists():
        store = open_store(home, project)
        try:
            lessons = store.list_lessons(LessonsRequest()).lessons
        finally:
            store.close()
    if as_json:
        echo_json([lesson.model_dump(mode="json", by_alias=True) for lesson in lessons])
        return
    table = Table(title="lessons")
    for column in ("id", "specification", "tests", "created"):
        table.add_column(column)
    for lesson in lessons:
        table.add_row(
            lesson.id, lesson.specification_id or "-", str(len(lesson.tests)), lesson.created_at
        )
    stdout_console().print(table)


@lessons_group.command(name="show")
@click.argument("lesson_id")
@_home
@click.option("--project", type=click.Path(path_type=Path, file_okay=False), default=None)
def lessons_show(lesson_id: str, home: Path | None, project: Path | None) -> None:
    """Show one lesson as JSON."""
    where = store_path(home, project)
    if not where.exists():
        raise UsageError(f"no memory store at {where}; lesson {lesson_id!r} does not exist")
    store = open_store(home, project)
    try:
        echo_json(store.get_lesson(LessonRequest(lesson_id=lesson_id)))
    finally:
        store.close()


def _summary(result: GenerateResult) -> None:
    console = stdout_console()
    generation = result.generation
    recall = result.recall
    if recall is None:
        console.print("memory: off (--no-memory)")
    else:
        ids = ", ".join(lesson.id for lesson in recall.lessons) or "none above the floor"
        console.print(f"lessons recalled: {ids}", markup=False)
        reached = ", ".join(generation.lessons_reached_author) or "none"
        console.print(f"lessons that reached the author: {reached}", markup=False)
    table = Table(title="role calls")
    for column in ("role", "spawned", "exit", "ms", "in bytes", "out bytes", "failure"):
        table.add_column(column)
    for receipt in generation.roles:
        table.add_row(
            receipt.role,
            "yes" if receipt.spawned else "no",
            "-" if receipt.exit_code is None else str(receipt.exit_code),
            str(receipt.duration_ms),
            str(receipt.input_bytes),
            "-" if receipt.output_bytes is None else str(receipt.output_bytes),
            receipt.failure or "",
        )
    console.print(table)
    console.print(f"generation: {generation.status}", markup=False)
    if generation.reason:
        console.print(f"  {generation.reason}", markup=False)
    validation = result.validation
    if validation is not None:
        cases = Table(title="candidate validation")
        cases.add_column("case")
        cases.add_column("verdict")
        for case in validation.cases:
            cases.add_row(case.id, case.status)
        console.print(cases)
        console.print(f"validation: {validation.reason}", markup=False)
        for violation in validation.path_violations:
            console.print(f"  refused: {violation}", markup=False)
    applied = result.apply
    if applied is not None:
        for case_id in applied.dropped_cases:
            console.print(f"dropped: {case_id}", markup=False)
        for path in applied.written:
            verb = "would write" if applied.dry_run else "wrote"
            console.print(f"{verb}: {path}", markup=False)
        console.print(applied.reason, markup=False)


def _succeeded(result: GenerateResult) -> bool:
    applied = result.apply
    return applied is not None and (applied.applied or (applied.dry_run and bool(applied.written)))


@click.command(name="generate")
@click.argument("project", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--requirements",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="File with the requirements text (examples in lorelab's grammar help the fixture).",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    required=True,
    help="Source file under test, relative to PROJECT (repeat for several).",
)
@click.option(
    "--agent",
    required=True,
    help="Worker: a shipped adapter name (fixture, claude, codex, gemini, pynguin) or a JSON argv.",
)
@click.option(
    "--reviewer-agent",
    default=None,
    help="A separate worker for the reviewer role (for authors that cannot review, e.g. pynguin).",
)
@click.option(
    "--runner",
    type=click.Choice(["pytest", "node"]),
    default=None,
    help="Test runner (default: node when every --source is JavaScript, pytest when Python).",
)
@click.option("--no-memory", is_flag=True, help="Recall no lessons (no store is opened).")
@_home
@click.option(
    "--lessons",
    "k",
    type=click.IntRange(1, 10),
    default=DEFAULT_K,
    show_default=True,
    help="Most lessons recalled above the relevance floor and shown to the author.",
)
@click.option(
    "--stability-runs",
    type=_runs_range,
    default=5,
    show_default=True,
    help="Runs of the generated tests that must agree before anything is applied.",
)
@_test_timeout_option
@click.option(
    "--timeout-ms",
    type=click.IntRange(1, MAX_TIMEOUT_MS),
    default=DEFAULT_TIMEOUT_MS,
    show_default=True,
    help="Timeout of each role call in milliseconds; the worker's process group is killed at it.",
)
@click.option(
    "--max-output-bytes",
    type=click.IntRange(1, MAX_OUTPUT_BYTES_CAP),
    default=DEFAULT_MAX_OUTPUT_BYTES,
    show_default=True,
    help="Most bytes a role call may print; one byte more fails the call.",
)
@click.option("--keep-passing", is_flag=True, help="Keep only validated cases.")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option("--allow-conftest", is_flag=True, help="Let the author add tests/conftest.py.")
@click.option("--identity", "operator_identity", default=None, help="Operator's identity text.")
@click.option("--output", type=click.Path(path_type=Path), default=None, help="Receipt directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole record as JSON.")
def generate_command(
    project: Path,
    requirements: Path,
    sources: tuple[str, ...],
    agent: str,
    reviewer_agent: str | None,
    runner: str | None,
    no_memory: bool,
    home: Path | None,
    k: int,
    stability_runs: int,
    timeout_s: float,
    timeout_ms: int,
    max_output_bytes: int,
    keep_passing: bool,
    dry_run: bool,
    allow_conftest: bool,
    operator_identity: str | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """Generate tests for PROJECT through a worker, validate them, and apply them.

    Nothing touches PROJECT unless the tests pass review and candidate validation (collected,
    passing on the unmodified source, stable over --stability-runs, independent of order).
    Exit 0 when tests were written (or would be, with --dry-run), 1 when the generation was
    rejected or failed or validation refused it, 2 for bad input, 3 for a worker identity
    failure.
    """
    try:
        text = read_bounded(requirements).decode("utf-8")
    except UnicodeDecodeError:
        raise InputFileError(f"{requirements}: requirements are not UTF-8 text") from None
    argv = tuple(resolve_agent(agent))
    if runner is None:
        files = read_project(project).files
        runner = detect_runner(select_sources(project, files, sources))
    resolved_runner: RunnerName = "node" if runner == "node" else "pytest"
    refuse_existing_output(output)
    result = generate_for_project(
        GenerateOptions(
            project=project,
            requirements=text,
            sources=sources,
            agent=argv,
            runner=resolved_runner,
            memory=not no_memory,
            home=home,
            k=k,
            stability_runs=stability_runs,
            timeout_s=timeout_s,
            timeout_ms=timeout_ms,
            max_output_bytes=max_output_bytes,
            keep_passing=keep_passing,
            dry_run=dry_run,
            allow_conftest=allow_conftest,
            operator_identity=operator_identity,
            reviewer_agent=tuple(resolve_agent(reviewer_agent)) if reviewer_agent else None,
        )
    )
    if output is not None:
        create_output_dir(output).write_json("generation.json", result)
    if as_json:
        echo_json(result)
    else:
        _summary(result)
    exit_with(0 if _succeeded(result) else 1)
