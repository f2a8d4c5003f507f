"""Pynguin adapter: a real, non-LLM author that runs Pynguin's search on the module under test.

For the author role it copies ``task.source`` into a temporary project, runs Pynguin (its own
virtual environment; executable from ``--pynguin``, else ``LORELAB_PYNGUIN``, else ``pynguin``
on PATH) once per ``src/<name>.py`` module, and returns the generated tests as
``tests/test_<name>.py``. The search is bounded by a number of algorithm iterations and runs
with a fixed seed and a fixed hash seed, so the same input gives the same tests on a loaded
machine; its wall-time bound is the call's own tool timeout unless ``--search-seconds`` says
otherwise, so that Pynguin can restart a search process that died. When lessons are present, the
statements of their Python tests that call functions the module under test defines (pointed at
that module) become Pynguin's initial population; the rest are dropped and named. Raising tests
are wrapped in ``pytest.raises`` (``--no_xfail``); a generated test still marked xfail, or one
that asserts nothing while others do, is dropped and named. The architect role is answered with
one case saying that Pynguin plans nothing; reviewer and host are refused. Pynguin executes the
module under test, so it runs only when ``PYNGUIN_DANGER_AWARE`` is set, as Pynguin itself
demands.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from lorelab.io import ProcessResult
from lorelab.workers._tools import AGENT_TOOLS
from lorelab.workers.adapters._agent import (
    AdapterFailure,
    Answer,
    Request,
    base_parser,
    run_adapter,
    run_tool,
    stderr_excerpt,
    tool_executable,
)
from lorelab.workers.adapters._pynguin_seed import (
    SeedTally,
    TestNode,
    seed_source,
)
from lorelab.workers.roles import AuthorPayload, count_test_cases

TOOL: Final = AGENT_TOOLS["lorelab.workers.adapters.pynguin"]
VARIABLE: Final = TOOL.variable
DANGER: Final = TOOL.consent or "PYNGUIN_DANGER_AWARE"
DEFAULT_ITERATIONS: Final = 40
DEFAULT_SEED: Final = 20240601
# Pynguin iterates sets of strings: a fixed hash seed is part of a repeatable search.
HASH_SEED: Final = "0"
DEFAULT_ASSERTIONS: Final = "SIMPLE"
ASSERTION_GENERATORS: Final = ("SIMPLE", "MUTATION_ANALYSIS", "CHECKED_MINIMIZING")
DEFAULT_FLOAT_PRECISION: Final = 1e-6
# Pynguin 0.48 writes every float assertion with its default tolerance whatever
# --float-precision says; the adapter sets the tolerance it was asked for.
PYNGUIN_FLOAT_TOLERANCE: Final = "abs=0.01, rel=0.01"
_APPROX: Final = re.compile(r"(pytest\.approx\([^()\n]*?, )abs=0\.01, rel=0\.01\)")
_MODULE_PATH: Final = re.compile(r"src/([A-Za-z_][A-Za-z0-9_]*)\.py")
ARCHITECT_CASE: Final = {
    "name": "pynguin_search",
    "intent": (
        "Pynguin plans no cases: the author role runs Pynguin's search-based generation on "
        "each module under test and returns whatever regression tests it generates."
    ),
}


def _parser() -> Any:
    parser = base_parser("pynguin-adapter", "Pynguin as a lorelab.worker/1 author.")
    parser.add_argument("--pynguin", help="Path of the pynguin executable (its own venv).")
    parser.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=(
            "Pynguin's search budget per module in algorithm iterations, so runs repeat "
            f"(default {DEFAULT_ITERATIONS})."
        ),
    )
    parser.add_argument(
        "--search-seconds",
        type=int,
        default=None,
        help=(
            "Also stop Pynguin's search after this many seconds. Off by default: a wall-time "
            "bound makes the generated tests depend on the machine's load."
        ),
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"Pynguin's random seed, fixed for repeatability (default {DEFAULT_SEED}).",
    )
    parser.add_argument(
        "--assertion-generation",
        choices=ASSERTION_GENERATORS,
        default=DEFAULT_ASSERTIONS,
        help=(
            "Pynguin's assertion generator (default SIMPLE: assert every observed value, "
            "floats and tuple items included; MUTATION_ANALYSIS keeps only those that kill a "
            "mutant)."
        ),
    )
    parser.add_argument(
        "--lesson-seeding",
        choices=("on", "off"),
        default="on",
        help=(
            "Seed Pynguin's initial population from the lessons' statements that call the "
            "module under test (default on; off runs every search unseeded and reports every "
            "lesson statement as dropped)."
        ),
    )
    parser.add_argument(
        "--float-precision",
        type=float,
        default=DEFAULT_FLOAT_PRECISION,
        help=(
            "Absolute and relative tolerance written into Pynguin's float assertions "
            f"(default {DEFAULT_FLOAT_PRECISION:g}; Pynguin writes 0.01)."
        ),
    )
    return parser


# --- trimming Pynguin's output -------------------------------------------------------------


def drop_tests(source: str, drop: Callable[[int, TestNode], bool]) -> tuple[str, list[str]]:
    """Remove the top-level test functions ``drop(index, node)`` selects, decorators included.

    Returns the source and the names removed; a source that does not parse is returned as is.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source, []
    tests = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    chosen = [node for index, node in enumerate(tests) if drop(index, node)]
    if not chosen:
        return source, []
    lines = source.splitlines(keepends=True)
    removed: set[int] = set()
    for node in chosen:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        removed.update(range(first - 1, node.end_lineno or node.lineno))
    kept = "".join(line for index, line in enumerate(lines) if index not in removed)
    return kept, [node.name for node in chosen]


def keep_first_tests(source: str, limit: int) -> tuple[str, int]:
    """Drop test functions after the first ``limit`` (whole definitions, decorators included)."""
    kept, removed = drop_tests(source, lambda index, _: index >= limit)
    return kept, len(removed)


def is_xfail(test: TestNode) -> bool:
    """Whether a test is marked ``pytest.mark.xfail`` (bare or called)."""
    for decorator in test.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "xfail":
            return True
    return False


def asserts_nothing(test: TestNode) -> bool:
    """Whether a test has neither an ``assert`` nor a ``pytest.raises``."""
    for node in ast.walk(test):
        if isinstance(node, ast.Assert):
            return False
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "raises"
        ):
            return False
    return True


def tighten_floats(source: str, precision: float) -> tuple[str, int]:
    """Pynguin's ``pytest.approx(v, abs=0.01, rel=0.01)`` with ``precision`` as both tolerances.

    The expected values are the ones Pynguin observed, written in full; only the tolerance
    changes, so a result that moved by less than 1% no longer passes.
    """
    return _APPROX.subn(lambda m: f"{m[1]}abs={precision!r}, rel={precision!r})", source)


def clean_generated(
    source: str, max_cases: int, precision: float | None = None
) -> tuple[str, list[str]]:
    """Pynguin's tests without xfail-marked tests, without assertion-free tests (unless no
    test asserts anything: then they stay, for the reviewer to judge), cut to ``max_cases``,
    with float tolerances set to ``precision`` when given."""
    notes: list[str] = []
    if precision is not None:
        source, tightened = tighten_floats(source, precision)
        if tightened:
            notes.append(
                f"set the tolerance of {tightened} float assertion(s) from "
                f"{PYNGUIN_FLOAT_TOLERANCE} to {precision:g}"
            )
    source, xfail = drop_tests(source, lambda _, node: is_xfail(node))
    if xfail:
        notes.append(f"dropped {len(xfail)} xfail-marked test(s): {', '.join(xfail)}")
    kept, quiet = drop_tests(source, lambda _, node: asserts_nothing(node))
    if quiet and count_test_cases("pytest", kept) > 0:
        source = kept
        notes.append(f"dropped {len(quiet)} test(s) that assert nothing: {', '.join(quiet)}")
    elif quiet:
        # Nothing asserts: return the tests as generated and let the reviewer judge them.
        notes.append(f"no generated test asserts anything ({', '.join(quiet)}); kept as generated")
    source, over = keep_first_tests(source, max_cases)
    if over:
        notes.append(f"dropped {over} generated tests over limits.maxCases")
    return source, notes


# --- the author ----------------------------------------------------------------------------


def _pynguin_argv(
    request: Request,
    executable: str,
    project: Path,
    module: str,
    output: Path,
    seed_dir: Path | None,
    *,
    seconds: int,
    isolated: bool = False,
) -> list[str]:
    options = request.options
    argv = [
        executable,
        "--project-path",
        str(project),
        "--module-name",
        f"src.{module}",
        "--output-path",
        str(output),
        "--maximum-iterations",
        str(options.iterations),
        "--seed",
        str(options.seed),
        "--no_xfail",
        "True",
        "--assertion-generation",
        options.assertion_generation,
        "--no-rich",
    ]
    # Pynguin restarts a search process that died (with every test execution then in a child
    # process) only while wall time is left, and an iteration-bounded search has none: it
    # gives up ("Maximum search time is zero"), as on ``commonprefix``, where executing the
    # instrumented module crashes CPython. So the search also gets a wall-time bound: the one
    # asked for, or else the tool timeout of this call, which it could not outlive anyway.
    argv += ["--maximum-search-time", str(seconds)]
    if isolated:
        # Every test execution in a child process of its own: what executing the module does
        # to a process stays in that child.
        argv += ["--subprocess", "True", "--subprocess_if_recommended", "False"]
    if seed_dir is not None:
        argv += [
            "--initial_population_seeding",
            "True",
            "--initial-population-data",
            str(seed_dir),
        ]
    return argv


def _search_seconds(request: Request) -> int:
    """Pynguin's wall-time bound: ``--search-seconds``, else the whole seconds of this call's
    tool timeout (a bound the search cannot outlive anyway; at least 1)."""
    if request.options.search_seconds is not None:
        return int(request.options.search_seconds)
    return max(int(request.budget.tool_timeout_s), 1)


def _run_pynguin(
    request: Request,
    executable: str,
    root: Path,
    module: str,
    seed_dir: Path | None,
    notes: list[str],
) -> Path:
    """Run Pynguin on ``src.<module>``; the path of the test file it generated.

    The search runs Pynguin's test executions in threads of its own process (fast). Executing
    some instrumented modules corrupts that process: on ``commonprefix`` CPython dies of a
    segmentation fault (Pynguin restarts the search, in child-process mode, when wall time is
    left) or fails on a record that is no longer what it was (``NameError``, ``TypeError``
    inside Pynguin's tracer: no restart). When the search fails, it runs once more, in what is
    left of the tool timeout, with every test execution in a child process from the start, and
    the receipt says so. A second failure fails the call.
    """
    environment = {**os.environ, "PYTHONHASHSEED": HASH_SEED}
    started = time.monotonic()

    def search(isolated: bool) -> tuple[ProcessResult, Path]:
        left = request.budget.tool_timeout_s - (time.monotonic() - started)
        seconds = _search_seconds(request) if not isolated else max(int(left), 1)
        if request.options.search_seconds is not None:
            seconds = min(seconds, request.options.search_seconds)
        output = root / f"out-{module}{'-isolated' if isolated else ''}"
        output.mkdir()
        argv = _pynguin_argv(
            request,
            executable,
            root / "project",
            module,
            output,
            seed_dir,
            seconds=seconds,
            isolated=isolated,
        )
        # Pynguin writes its statistics report into its cwd: keep it in the temp dir.
        result = run_tool(
            argv,
            request=request,
            stdin=None,
            tool="pynguin",
            variable=VARIABLE,
            cwd=root,
            env=environment,
            timeout_s=max(left, 1.0),
        )
        return result, output / f"test_{module}.py"

    result, generated = search(isolated=False)
    if result.exit_code != 0 or not generated.is_file():
        notes.append(
            f"src.{module}: Pynguin's search with test executions in threads failed (exit "
            f"{result.returncode}: {stderr_excerpt(result)}); searching again with every test "
            "execution in a child process (--subprocess True)"
        )
        result, generated = search(isolated=True)
    if result.exit_code != 0 or not generated.is_file():
        raise AdapterFailure(
            "tool-failed",
            f"pynguin exited {result.returncode} for src.{module} "
            f"without tests: {stderr_excerpt(result)}",
        )
    return generated


def _check_options(request: Request) -> None:
    options = request.options
    if options.iterations < 1:
        raise AdapterFailure("invalid-option", f"--iterations {options.iterations}: must be >= 1")
    if options.search_seconds is not None and options.search_seconds < 1:
        raise AdapterFailure(
            "invalid-option", f"--search-seconds {options.search_seconds}: must be >= 1"
        )
    if not 0 < options.float_precision < 1:
        raise AdapterFailure(
            "invalid-option",
            f"--float-precision {options.float_precision}: must be between 0 and 1",
        )


def _search_note(request: Request) -> str:
    """What bounds the search and fixes its result, for the role receipt's stderr."""
    options = request.options
    bound = (
        f"{options.iterations} iterations (wall time {_search_seconds(request)} s, the tool "
        "timeout: lets Pynguin restart a search process that died)"
        if options.search_seconds is None
        else f"{options.iterations} iterations or {options.search_seconds} s, whichever first "
        "(wall time: not repeatable)"
    )
    return (
        f"pynguin search: seed {options.seed}, PYTHONHASHSEED={HASH_SEED}, {bound}, "
        f"assertions {options.assertion_generation}, float precision {options.float_precision:g}"
    )


def _seed_dir(
    root: Path,
    payload: AuthorPayload,
    module: str,
    content: str,
    notes: list[str],
    tally: SeedTally,
    *,
    seeding: bool = True,
) -> Path | None:
    """The directory of ``module``'s lesson seed (None: no lessons, or none fits, or seeding
    is off); notes why, and counts what was kept and dropped in ``tally``."""
    if not payload.lessons:
        return None
    seed, report = seed_source(payload, module, content)
    notes += report.notes(module)
    dropped = report.dropped_statements + report.orphaned_statements
    if not seeding:
        tally.dropped += dropped + report.kept_statements
        tally.reasons.append(f"src.{module}: lesson seeding is off (--lesson-seeding off)")
        notes.append(f"lesson seeding is off: Pynguin runs unseeded for src.{module}")
        return None
    tally.kept += report.kept_statements
    tally.dropped += dropped
    tally.reasons += report.reasons(module)
    if seed is None:
        notes.append(f"no lesson statement fits src.{module}: Pynguin runs unseeded")
        return None
    seed_dir = root / f"seed-{module}"
    seed_dir.mkdir()
    (seed_dir / f"test_{module}.py").write_text(seed, encoding="utf-8")
    return seed_dir


def _author(request: Request) -> Answer:
    payload = AuthorPayload.model_validate(request.payload)
    if payload.task.runner != "pytest":
        raise AdapterFailure("unsupported-runner", "Pynguin generates pytest tests only")
    if os.environ.get(DANGER) is None:
        raise AdapterFailure(
            "not-consented",
            f"Pynguin executes the module under test; set {DANGER}=1 to let it run",
        )
    _check_options(request)
    modules = [
        (match.group(1), entry)
        for entry in payload.task.source
        if (match := _MODULE_PATH.fullmatch(entry.path))
    ]
    if not modules:
        raise AdapterFailure("no-module", "task.source holds no src/<name>.py module")
    options = request.options
    notes: list[str] = [_search_note(request)]
    if len(modules) > payload.limits.max_files:
        notes.append(
            f"{len(modules)} modules, limits.maxFiles {payload.limits.max_files}: "
            f"generating for {', '.join(name for name, _ in modules[: payload.limits.max_files])}"
        )
        modules = modules[: payload.limits.max_files]
    # Found against the trial cwd before Pynguin runs in its temporary directory.
    executable = tool_executable(request, TOOL)
    files: list[dict[str, str]] = []
    tally = SeedTally()
    cases_left = payload.limits.max_cases
    with tempfile.TemporaryDirectory(prefix="lorelab-pynguin-") as temp:
        root = Path(temp)
        project = root / "project"
        for entry in payload.task.source:
            target = project / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(entry.content, encoding="utf-8")
        for module, entry in modules:
            seed_dir = _seed_dir(
                root,
                payload,
                module,
                entry.content,
                notes,
                tally,
                seeding=options.lesson_seeding == "on",
            )
            generated = _run_pynguin(request, executable, root, module, seed_dir, notes)
            content, trimmed = clean_generated(
                generated.read_text(encoding="utf-8"), cases_left, options.float_precision
            )
            notes += [f"src.{module}: {note}" for note in trimmed]
            count = count_test_cases("pytest", content)
            if count == 0:
                notes.append(f"src.{module}: no generated test is left")
                continue
            cases_left -= count
            files.append({"path": f"tests/test_{module}.py", "content": content})
            if cases_left <= 0:
                break
    if not files:
        raise AdapterFailure("no-tests", "Pynguin generated no test for any module")
    return Answer(response={"files": files, "lessonSeed": tally.as_json()}, notes=notes)


def handle(request: Request) -> Answer:
    """Answer one role: author runs Pynguin, architect plans nothing, others are refused."""
    if request.role == "author":
        return _author(request)
    if request.role == "architect":
        return Answer(response={"cases": [dict(ARCHITECT_CASE)]})
    raise AdapterFailure(
        "unsupported-role", f"Pynguin cannot act as {request.role}; it only generates tests"
    )


def main() -> None:
    """Entry point: ``python -m lorelab.workers.adapters.pynguin [--pynguin PATH] ...``."""
    run_adapter(_parser(), handle, sys.argv[1:])


if __name__ == "__main__":
    main()
