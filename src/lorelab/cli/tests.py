"""``lorelab tests``: run a suite and report its stability, learn lessons from validated tests,
and generate new tests through a worker (TestLore).

``--home`` is accepted on the group (``lorelab tests --home DIR learn ...``) and on each
subcommand that opens the store.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

import click
from rich.table import Table
from rich.text import Text

from lorelab._model import DEFAULT_TIMEOUT_MS, RunnerName
from lorelab.cli._common import (
    LorelabGroup,
    echo_json,
    exit_with,
    printable,
    stderr_console,
    stdout_console,
)
from lorelab.cli._options import (
    agent_option,
    file_option,
    home_option,
    identity_option,
    json_option,
    max_output_bytes_option,
    output_option,
    project_option,
    worker_timeout_option,
)
from lorelab.errors import InputFileError, OutputExistsError, UsageError
from lorelab.io import (
    create_output_dir,
    escape_control,
    probe_sandbox,
    read_bounded,
    require_sandbox,
)
from lorelab.memory import Lesson, LessonRequest, LessonsRequest, open_store, store_path
from lorelab.runners import SuiteCheck, check_suite
from lorelab.testgen import (
    DEFAULT_K,
    DEFAULT_LEARN_RUNS,
    GenerateOptions,
    GenerateResult,
    LearnResult,
    detect_runner,
    generate_for_project,
    learn,
    read_example,
    read_project,
    select_sources,
)
from lorelab.workers import (
    DEFAULT_MAX_OUTPUT_BYTES,
    MAX_OUTPUT_BYTES_CAP,
    MAX_TIMEOUT_MS,
    WorkerBounds,
    resolve_agent,
)
from lorelab.workspace import RunRoot

_TAIL_LINES = 20
_TESTGEN_ADAPTERS = ("fixture", "claude", "codex", "gemini", "pynguin")
R = TypeVar("R")


@click.group(name="tests", cls=LorelabGroup)
@home_option()
@click.pass_context
def tests_group(ctx: click.Context, home: Path | None) -> None:
    """Run test suites, learn lessons from validated tests, and generate new tests."""
    ctx.ensure_object(dict)["home"] = home


def _resolve_home(home: Path | None) -> Path | None:
    """The memory home: the subcommand's --home, else the group's; two different ones refused."""
    obj = click.get_current_context().find_object(dict)
    group_home = obj.get("home") if obj is not None else None
    if home is not None and group_home is not None and Path(home) != Path(group_home):
        raise UsageError(f"--home given twice with different directories: {group_home}, {home}")
    return home if home is not None else group_home


def _print_table(path: Path, check: SuiteCheck) -> None:
    report = check.report
    console = stdout_console()

    def say(text: str) -> None:
        # Case ids and output hold brackets and colons: never read them as markup or emoji;
        # a test's ESC and bidi controls are shown escaped, never sent to the terminal.
        console.print(escape_control(text), markup=False, emoji=False)

    table = Table(title=Text(escape_control(f"{path} ({report.runner})")))
    for column in ("run", "classification", "exit", "ms", "passed", "failed", "error", "skipped"):
        table.add_column(column, justify="left" if column == "classification" else "right")
    for number, run in enumerate(report.runs, start=1):
        counts = dict.fromkeys(("passed", "failed", "error", "skipped"), 0)
        for case in run.cases:
            counts[case.status] += 1
        table.add_row(
            str(number),
            run.classification,
            "killed" if run.exit_code is None else str(run.exit_code),
            str(run.duration_ms),
            *(str(counts[status]) for status in ("passed", "failed", "error", "skipped")),
        )
    console.print(table)
    say(f"classification: {report.classification}")
    say(f"stable: {'yes' if report.stable else 'no'}")
    say(f"reason (run 1): {report.runs[0].reason}")
    if report.first_difference:
        say(f"first difference: {report.first_difference}")
    if report.flaky_cases:
        say("flaky cases:")
        for case_id in report.flaky_cases:
            say(f"  {case_id}")
    if not check.ok:
        # Show what the first run that went wrong printed: that is where the diagnosis is.
        bad = next(
            (run for run in check.stability.runs if run.classification != "passed"),
            check.stability.runs[0],
        )
        number = check.stability.runs.index(bad) + 1
        lines = bad.output_tail.rstrip().splitlines()[-_TAIL_LINES:]
        say(f"last lines of run {number}'s output:")
        for line in lines:
            say(f"  {line}")


@tests_group.command(name="run")
@click.argument("path", type=click.Path())
@click.option(
    "--runner",
    type=click.Choice(["pytest", "node"]),
    default=None,
    help=(
        "Runner to use. Default: node if PATH has package.json or a file node --test would "
        "run (*.test.js, *.test.mjs, test/*.js, ...), else pytest."
    ),
)
@click.option(
    "--stability-runs",
    type=int,
    default=3,
    show_default=True,
    help="How many times to run the suite (2 to 5).",
)
@click.option(
    "--timeout-s",
    type=float,
    default=120.0,
    show_default=True,
    help="Timeout of each run in seconds; the whole process group is killed at it.",
)
@click.option(
    "--sandbox",
    is_flag=True,
    help=(
        "Run the suite in bubblewrap: writes only to PATH and a private /tmp, no network, its "
        "own PID namespace, as far as this machine allows (the report's sandbox field says what "
        "it got); refused (exit 2, nothing run) where no sandbox works: apt-get install "
        "bubblewrap. Without it, runs are still contained: nothing a test starts survives the "
        "run."
    ),
)
@json_option("Print the report as JSON.")
def run_command(
    path: str,
    runner: str | None,
    stability_runs: int,
    timeout_s: float,
    sandbox: bool,
    as_json: bool,
) -> None:
    """Run the test suite at PATH several times and report classification and flaky cases.

    The suite runs in place; lorelab writes its reports outside PATH. Exit codes: 0 stable
    and passing; 1 unstable, failing, broken or empty; 2 invalid input, or --sandbox where no
    sandbox works (nothing run); 130/143 interrupted (the running tests are killed).
    """
    if not path:
        # Path("") means the current directory: an empty argument is a mistake, not a choice.
        raise UsageError("PATH is empty; name the project directory (. for the current one)")
    if sandbox:
        # Fails closed: a suite asked to be sandboxed never runs unconfined.
        require_sandbox("--sandbox")
    check = check_suite(
        Path(path), runner=runner, runs=stability_runs, timeout_s=timeout_s, sandbox=sandbox
    )
    stderr_console().print(
        escape_control(f"lorelab: runner {check.report.runner} ({check.report.runner_chosen_by})"),
        markup=False,
    )
    if sandbox and check.report.sandbox != "bubblewrap":
        stderr_console().print(
            f"lorelab: --sandbox: this machine allowed only {check.report.sandbox!r} "
            f"({probe_sandbox().detail}); see docs/security.md",
            markup=False,
        )
    if as_json:
        echo_json(check.report)
    else:
        _print_table(Path(path), check)
    exit_with(0 if check.ok else 1)


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


def _finish(
    result: R,
    output: Path | None,
    receipt: str,
    as_json: bool,
    table: Callable[[R], None],
    *,
    passed: bool,
) -> NoReturn:
    """Write the receipt (with --output), print the result, and exit 0 when it passed, else 1."""
    if output is not None:
        create_output_dir(output).write_json(receipt, result)
    if as_json:
        echo_json(result)
    else:
        table(result)
    exit_with(0 if passed else 1)


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
@home_option()
@project_option(
    "Project whose .lorelab/memory.db stores the lesson (default: current directory).",
    name="project",
    path_type=Path,
)
@click.option(
    "--stability-runs",
    type=_runs_range,
    default=DEFAULT_LEARN_RUNS,
    show_default=True,
    help="Runs of the example's tests that must agree before it becomes a lesson.",
)
@_test_timeout_option
@output_option(
    help_text="Fresh directory for the validation receipt (kept whether or not it is stored)."
)
@json_option()
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
    home = _resolve_home(home)
    parsed = read_example(example)
    refuse_existing_output(output)
    store = open_store(home, project)
    try:
        with RunRoot() as root:
            result = learn(store, parsed, root, runs=stability_runs, timeout_s=timeout_s)
    finally:
        store.close()
    _finish(result, output, "learn.json", as_json, _learn_table, passed=bool(result.lesson_id))


@click.group(name="lessons", cls=LorelabGroup)
def lessons_group() -> None:
    """List and show the lessons in the memory store."""


@lessons_group.command(name="list")
@home_option()
@project_option(name="project", path_type=Path)
@json_option()
def lessons_list(home: Path | None, project: Path | None, as_json: bool) -> None:
    """List every lesson, oldest first (an absent store lists nothing and is not created)."""
    home = _resolve_home(home)
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
@home_option()
@project_option(name="project", path_type=Path)
def lessons_show(lesson_id: str, home: Path | None, project: Path | None) -> None:
    """Show one lesson as JSON."""
    home = _resolve_home(home)
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
    for receipt in generation.roles:
        if receipt.failure is None:
            continue
        # The worker's own last words (for example the fixture's "the requirements state no
        # usable examples") are the reason a user needs, not only the failure class.
        console.print(f"{receipt.role}: {receipt.failure_detail or receipt.failure}", markup=False)
        said = [line.strip() for line in receipt.stderr_tail.splitlines() if line.strip()]
        if said:
            console.print(f"  worker said: {printable(said[-1])}", markup=False)
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
@file_option(
    "--requirements",
    required=True,
    help_text="File with the requirements text (examples in lorelab's grammar help the fixture).",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    required=True,
    help="Source file under test, relative to PROJECT (repeat for several).",
)
@agent_option(required=True, adapters=_TESTGEN_ADAPTERS)
@agent_option(
    flag="--reviewer-agent",
    name="reviewer_agent",
    prefix="A separate worker for the reviewer role (for authors that cannot review, e.g. "
    "pynguin):",
    adapters=_TESTGEN_ADAPTERS,
)
@click.option(
    "--runner",
    type=click.Choice(["pytest", "node"]),
    default=None,
    help="Test runner (default: node when every --source is JavaScript, pytest when Python).",
)
@click.option("--no-memory", is_flag=True, help="Recall no lessons (no store is opened).")
@home_option()
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
@worker_timeout_option(default_ms=DEFAULT_TIMEOUT_MS, max_ms=MAX_TIMEOUT_MS)
@max_output_bytes_option(
    default=DEFAULT_MAX_OUTPUT_BYTES,
    help_text="Most bytes a role call may print; one byte more fails the call.",
    bounds=(1, MAX_OUTPUT_BYTES_CAP),
)
@click.option("--keep-passing", is_flag=True, help="Keep only validated cases.")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option("--allow-conftest", is_flag=True, help="Let the author add tests/conftest.py.")
@identity_option("Operator's identity text.")
@output_option(help_text="Receipt directory (must not exist).")
@json_option("Print the whole record as JSON.")
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
    home = _resolve_home(home)
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
            bounds=WorkerBounds(timeout_ms, max_output_bytes),
            keep_passing=keep_passing,
            dry_run=dry_run,
            allow_conftest=allow_conftest,
            operator_identity=operator_identity,
            reviewer_agent=tuple(resolve_agent(reviewer_agent)) if reviewer_agent else None,
        )
    )
    _finish(result, output, "generation.json", as_json, _summary, passed=_succeeded(result))


tests_group.add_command(learn_command)
tests_group.add_command(lessons_group)
tests_group.add_command(generate_command)
