"""Pynguin adapter: a real, non-LLM author that runs Pynguin's search on the module under test.

For the author role it copies ``task.source`` into a temporary project, runs Pynguin (its own
virtual environment; executable from ``--pynguin``, else ``LORELAB_PYNGUIN``, else ``pynguin`` on
PATH) once per ``src/<name>.py`` module, and returns the generated tests as
``tests/test_<name>.py``. When lessons are present, their Python tests (with ``src.<module>``
references pointed at the module under test) become Pynguin's initial population
(``--initial_population_seeding True --initial-population-data DIR``); Pynguin keeps the
statements it can resolve against the module. The architect role is answered with one case
saying that Pynguin plans nothing; reviewer and host are refused. Pynguin executes the module
under test, so it runs only when ``PYNGUIN_DANGER_AWARE`` is set, as Pynguin itself demands.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

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
from lorelab.workers.roles import AuthorPayload, count_test_cases

TOOL: Final = AGENT_TOOLS["lorelab.workers.adapters.pynguin"]
VARIABLE: Final = TOOL.variable
DANGER: Final = "PYNGUIN_DANGER_AWARE"
DEFAULT_SEARCH_SECONDS: Final = 10
DEFAULT_SEED: Final = 20240601
# Pynguin needs a few seconds to start and to write its tests after the search.
STARTUP_SECONDS: Final = 8
_MODULE_PATH: Final = re.compile(r"src/([A-Za-z_][A-Za-z0-9_]*)\.py")
_SRC_REFERENCE: Final = re.compile(r"\bsrc\.([A-Za-z_][A-Za-z0-9_]*)\b")
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
        "--search-seconds",
        type=int,
        default=DEFAULT_SEARCH_SECONDS,
        help=f"Pynguin's maximum search time per module (default {DEFAULT_SEARCH_SECONDS}).",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"Pynguin's random seed, fixed for repeatability (default {DEFAULT_SEED}).",
    )
    return parser


def seed_source(payload: AuthorPayload, module: str) -> str | None:
    """One seed module built from the lessons' Python tests, pointed at ``src.<module>``."""
    parts: list[str] = []
    for lesson in payload.lessons:
        for test in lesson.tests:
            if not test.path.endswith(".py"):
                continue
            parts.append(
                f"# lesson {lesson.id}: {test.path}\n"
                + _SRC_REFERENCE.sub(f"src.{module}", test.content)
            )
    return "\n\n".join(parts) + "\n" if parts else None


def keep_first_tests(source: str, limit: int) -> tuple[str, int]:
    """Drop test functions after the first ``limit`` (whole definitions, decorators included)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, 0
    tests = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    if len(tests) <= limit:
        return source, 0
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tests[limit:]:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        drop.update(range(first - 1, (node.end_lineno or node.lineno)))
    kept = "".join(line for index, line in enumerate(lines) if index not in drop)
    return kept, len(tests) - limit


def _pynguin_argv(
    request: Request,
    executable: str,
    project: Path,
    module: str,
    output: Path,
    seed_dir: Path | None,
    seconds: int,
) -> list[str]:
    argv = [
        executable,
        "--project-path",
        str(project),
        "--module-name",
        f"src.{module}",
        "--output-path",
        str(output),
        "--maximum-search-time",
        str(seconds),
        "--seed",
        str(request.options.seed),
        "--no-rich",
    ]
    if seed_dir is not None:
        argv += [
            "--initial_population_seeding",
            "True",
            "--initial-population-data",
            str(seed_dir),
        ]
    return argv


def _author(request: Request) -> Answer:
    payload = AuthorPayload.model_validate(request.payload)
    if payload.task.runner != "pytest":
        raise AdapterFailure("unsupported-runner", "Pynguin generates pytest tests only")
    if os.environ.get(DANGER) is None:
        raise AdapterFailure(
            "not-consented",
            f"Pynguin executes the module under test; set {DANGER}=1 to let it run",
        )
    modules = [
        (match.group(1), entry)
        for entry in payload.task.source
        if (match := _MODULE_PATH.fullmatch(entry.path))
    ]
    if not modules:
        raise AdapterFailure("no-module", "task.source holds no src/<name>.py module")
    notes: list[str] = []
    if len(modules) > payload.limits.max_files:
        notes.append(
            f"{len(modules)} modules, limits.maxFiles {payload.limits.max_files}: "
            f"generating for {', '.join(name for name, _ in modules[: payload.limits.max_files])}"
        )
        modules = modules[: payload.limits.max_files]
    # Found against the trial cwd before Pynguin runs in its temporary directory.
    executable = tool_executable(request, TOOL)
    deadline = time.monotonic() + request.budget.tool_timeout_s
    files: list[dict[str, str]] = []
    cases_left = payload.limits.max_cases
    with tempfile.TemporaryDirectory(prefix="lorelab-pynguin-") as temp:
        root = Path(temp)
        project = root / "project"
        for entry in payload.task.source:
            target = project / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(entry.content, encoding="utf-8")
        for index, (module, _) in enumerate(modules):
            remaining = deadline - time.monotonic()
            per_module = remaining / (len(modules) - index)
            seconds = min(request.options.search_seconds, int(per_module - STARTUP_SECONDS))
            if seconds < 1:
                raise AdapterFailure(
                    "budget-too-small",
                    f"{remaining:.0f} s left for {len(modules) - index} module(s): too little "
                    "for Pynguin to start and search",
                )
            seed_dir: Path | None = None
            seed = seed_source(payload, module)
            if seed is not None:
                seed_dir = root / f"seed-{module}"
                seed_dir.mkdir()
                (seed_dir / f"test_{module}.py").write_text(seed, encoding="utf-8")
                notes.append(
                    f"seeded Pynguin for src.{module} from {len(payload.lessons)} lesson(s)"
                )
            output = root / f"out-{module}"
            output.mkdir()
            result = run_tool(
                _pynguin_argv(request, executable, project, module, output, seed_dir, seconds),
                request=request,
                stdin=None,
                tool="pynguin",
                variable=VARIABLE,
                # Pynguin writes its statistics report into its cwd: keep it in the temp dir.
                cwd=root,
            )
            generated = output / f"test_{module}.py"
            if result.exit_code != 0 or not generated.is_file():
                raise AdapterFailure(
                    "tool-failed",
                    f"pynguin exited {result.returncode} for src.{module} "
                    f"without tests: {stderr_excerpt(result)}",
                )
            content, dropped = keep_first_tests(generated.read_text(encoding="utf-8"), cases_left)
            if dropped:
                notes.append(f"dropped {dropped} generated tests over limits.maxCases")
            cases_left -= count_test_cases("pytest", content)
            files.append({"path": f"tests/test_{module}.py", "content": content})
            if cases_left <= 0:
                break
    return Answer(response={"files": files}, notes=notes)


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
