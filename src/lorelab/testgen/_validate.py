"""Candidate validation: generated tests must earn their place before they touch a project.

In order: the path policy (test files only, at canonical test paths; no source edits, no
``conftest.py`` unless explicitly allowed, no configuration files); then, in a disposable copy
of the project, the suite must be collected without errors and every case must pass on the
unmodified source in each of N runs (stable); then it is run once more in reverse order, and
any case whose status changes depends on order. Every case is reported with its verdict.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lorelab._model import TEST_PATHS, RunnerName
from lorelab.runners import Execution, Stability, get_runner, run_stability
from lorelab.testgen._models import (
    CandidateValidation,
    CaseVerdict,
)
from lorelab.workspace import FileEntry, RunRoot

CONFTEST: Final = "tests/conftest.py"


def _layout_clash(path: str, files: dict[str, str], dirs: dict[str, str]) -> str | None:
    key = path.casefold()
    if key in files:
        return f"the project has {files[key]!r}, equal ignoring case"
    if key in dirs:
        return f"the project has a directory {dirs[key]!r} there"
    segments = path.split("/")
    for depth in range(1, len(segments)):
        prefix = "/".join(segments[:depth])
        folded = prefix.casefold()
        if folded in files:
            return f"the project has a file {files[folded]!r} where a directory goes"
        if folded in dirs and dirs[folded] != prefix:
            return f"the project's directory {dirs[folded]!r} differs only by case"
    return None


def path_violations(
    runner: RunnerName,
    tests: Sequence[FileEntry],
    existing: Sequence[str],
    *,
    allow_conftest: bool = False,
) -> list[str]:
    """Every reason the path policy refuses ``tests``; empty when all paths are acceptable."""
    present = set(existing)
    # Every existing file and directory by its case-folded name: a new path that differs
    # from one only by case is refused too (on a case-insensitive file system it is the same
    # file), and so is a path whose file or directory would stand where the other kind is.
    files = {path.casefold(): path for path in existing}
    dirs: dict[str, str] = {}
    for path in existing:
        segments = path.split("/")
        for depth in range(1, len(segments)):
            prefix = "/".join(segments[:depth])
            dirs.setdefault(prefix.casefold(), prefix)
    problems: list[str] = []
    for entry in tests:
        clash = _layout_clash(entry.path, files, dirs)
        if entry.path in present:
            problems.append(f"{entry.path}: already exists in the project; never overwritten")
        elif clash is not None:
            problems.append(f"{entry.path}: {clash}; never overwritten")
        elif runner == "pytest" and entry.path == CONFTEST:
            if not allow_conftest:
                problems.append(f"{entry.path}: conftest changes are refused unless allowed")
        elif not TEST_PATHS[runner].fullmatch(entry.path):
            problems.append(
                f"{entry.path}: not a {runner} test path; only new test files may be written"
            )
    return problems


def _verdicts(stability: Stability, reverse: Execution | None) -> list[CaseVerdict]:
    order: dict[str, None] = {}
    for run in stability.runs:
        for case in run.cases:
            order.setdefault(case.id, None)
    flaky = set(stability.flaky_cases)
    first = {case.id: case.status for case in stability.runs[0].cases}
    backwards = {case.id: case.status for case in reverse.cases} if reverse else None
    verdicts = []
    for case_id in order:
        if case_id in flaky:
            verdicts.append(CaseVerdict(id=case_id, status="flaky"))
        elif backwards is not None and backwards.get(case_id) != first[case_id]:
            verdicts.append(CaseVerdict(id=case_id, status="order-dependent"))
        else:
            verdicts.append(CaseVerdict(id=case_id, status=first[case_id]))
    return verdicts


def validate_candidates(
    root: RunRoot,
    name: str,
    base: Sequence[FileEntry],
    tests: Sequence[FileEntry],
    *,
    runner: RunnerName,
    runs: int,
    timeout_s: float,
    allow_conftest: bool = False,
    plugin_autoload: bool = True,
    existing: Sequence[str] | None = None,
) -> tuple[CandidateValidation, Path | None]:
    """Validate ``tests`` against the unmodified ``base`` files in a new project ``name``.

    ``existing`` lists every path of the real project (default: ``base``'s), so a candidate
    can never replace one. Every case must pass: a skipped or xfail case is not a passing
    one. Returns the validation and the project it ran in (None when the path policy refused
    the files before anything ran), so callers can reuse the validated project.
    """
    started = time.perf_counter()

    def done(
        valid: bool,
        reason: str,
        violations: list[str],
        stability: Stability | None = None,
        reverse: Execution | None = None,
    ) -> CandidateValidation:
        return CandidateValidation(
            valid=valid,
            reason=reason,
            path_violations=violations,
            stability=stability,
            reverse=reverse,
            cases=_verdicts(stability, reverse) if stability and stability.runs else [],
            validation_ms=int((time.perf_counter() - started) * 1000),
        )

    present = list(existing) if existing is not None else [entry.path for entry in base]
    violations = path_violations(runner, tests, present, allow_conftest=allow_conftest)
    if violations:
        return done(False, f"path policy: {violations[0]}", violations), None
    if not tests:
        return done(False, "no test files to validate", []), None
    project = root.create_project(name, [*base, *tests])
    # Generated tests are untrusted code: sandboxed as far as this machine allows.
    test_runner = get_runner(runner, plugin_autoload=plugin_autoload, sandbox=True)
    stability = run_stability(test_runner, project, runs=runs, timeout_s=timeout_s)
    if not stability.stable:
        return done(False, f"unstable: {stability.first_difference}", [], stability), project
    if stability.classification != "passed":
        reason = stability.runs[0].reason
        return done(False, f"{stability.classification}: {reason}", [], stability), project
    not_passing = [case for case in stability.runs[0].cases if case.status != "passed"]
    if not_passing:
        first = not_passing[0]
        return done(
            False,
            f"not every case passed: {first.id} is {first.status}"
            + (f" (and {len(not_passing) - 1} more)" if len(not_passing) > 1 else ""),
            [],
            stability,
        ), project
    reverse = test_runner.run(project, timeout_s=timeout_s, reverse=True)
    result = done(True, "valid", [], stability, reverse)
    dependent = [case.id for case in result.cases if case.status == "order-dependent"]
    if dependent or reverse.classification != "passed":
        detail = ", ".join(dependent) if dependent else reverse.reason
        return result.model_copy(
            update={"valid": False, "reason": f"order-dependent in the reverse run: {detail}"}
        ), project
    return result, project
