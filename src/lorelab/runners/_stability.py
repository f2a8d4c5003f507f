"""Stability (one execution repeated N times) and the detection rule built on it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lorelab.errors import ComparisonRefused, UsageError
from lorelab.runners._base import TestRunner
from lorelab.runners._models import (
    MAX_STABILITY_RUNS,
    MIN_STABILITY_RUNS,
    DefectOutcome,
    Execution,
    Stability,
)

_BROKEN = ("collection-error", "timeout", "crashed", "no-tests", "tampered")


def check_runs(runs: int) -> int:
    """Return ``runs`` if it is a usable number of stability runs, else raise UsageError."""
    if isinstance(runs, bool) or not isinstance(runs, int):
        raise UsageError(f"stability runs {runs!r}: must be a whole number")
    if not MIN_STABILITY_RUNS <= runs <= MAX_STABILITY_RUNS:
        raise UsageError(
            f"stability runs {runs}: must be between {MIN_STABILITY_RUNS} and {MAX_STABILITY_RUNS}"
        )
    return runs


def _exit_codes(execution: Execution) -> tuple[int | None, ...]:
    return (execution.exit_code, *(process.exit_code for process in execution.processes))


def _case_difference(first: Execution, other: Execution, number: int) -> str | None:
    before = {case.id: case.status for case in first.cases}
    after = {case.id: case.status for case in other.cases}
    for case_id, status in before.items():
        if case_id not in after:
            return f"case {case_id}: {status} in run 1, missing in run {number}"
        if after[case_id] != status:
            return f"case {case_id}: {status} in run 1, {after[case_id]} in run {number}"
    for case_id, status in after.items():
        if case_id not in before:
            return f"case {case_id}: missing in run 1, {status} in run {number}"
    return None


def first_difference(first: Execution, other: Execution, number: int) -> str | None:
    """How run ``number`` differs from run 1 (cases, then classification, then exit codes)."""
    parts = []
    case = _case_difference(first, other, number)
    if case is not None:
        parts.append(case)
    if first.classification != other.classification:
        parts.append(
            f"classification {first.classification} in run 1, "
            f"{other.classification} in run {number}"
        )
    if not parts and _exit_codes(first) != _exit_codes(other):
        parts.append(
            f"exit codes {list(_exit_codes(first))} in run 1, "
            f"{list(_exit_codes(other))} in run {number}"
        )
    return "; ".join(parts) or None


def flaky_cases(executions: Sequence[Execution]) -> list[str]:
    """Case ids whose status is not the same in every run (absent counts as different)."""
    order: dict[str, None] = {}
    for execution in executions:
        for case in execution.cases:
            order.setdefault(case.id, None)
    statuses = [{case.id: case.status for case in execution.cases} for execution in executions]
    return [case_id for case_id in order if len({per_run.get(case_id) for per_run in statuses}) > 1]


def assess(executions: Sequence[Execution]) -> Stability:
    """Judge already-made repetitions of one execution; every run is kept in the result."""
    if not executions:
        raise UsageError("stability needs at least one execution")
    first = executions[0]
    difference = None
    for number, other in enumerate(executions[1:], start=2):
        difference = first_difference(first, other, number)
        if difference is not None:
            break
    stable = difference is None
    return Stability(
        stable=stable,
        classification=first.classification if stable else "unstable",
        runs=list(executions),
        first_difference=difference,
        flaky_cases=flaky_cases(executions),
    )


def run_stability(
    runner: TestRunner, project: Path, *, runs: int, timeout_s: float, reverse: bool = False
) -> Stability:
    """Run the suite of ``project`` ``runs`` times (2 to 5), one after another, and judge it."""
    count = check_runs(runs)
    executions = [runner.run(project, timeout_s=timeout_s, reverse=reverse) for _ in range(count)]
    return assess(executions)


def is_valid_baseline(baseline: Stability) -> bool:
    """Whether a suite's reference run can serve as a detection baseline: stable and passing."""
    return baseline.stable and baseline.classification == "passed"


def detect(baseline: Stability, defect: Stability) -> DefectOutcome:
    """Decide whether the suite detected a defect, by the rule in the module docs.

    ``baseline`` is the suite on the reference source and must be stable and passing (else
    :class:`ComparisonRefused`). The defect is ``detected`` only if a case that passed on the
    reference failed or errored on the defect in a complete, stable execution, for a reason
    other than a failed import (``Case.failure_kind == "import"`` in any run). A collection
    error, timeout, crash, empty run or instability on the defect is ``broken``, never a
    detection; so is a defect whose every reference-passing failing case only failed to import.
    """
    if not is_valid_baseline(baseline):
        raise ComparisonRefused(
            "detection needs a baseline that is stable and passing; "
            f"this one is {baseline.classification}"
        )
    if not defect.runs:
        raise ComparisonRefused("the defect stability record has no runs")
    if baseline.runs[0].runner != defect.runs[0].runner:
        raise ComparisonRefused(
            f"baseline ran with {baseline.runs[0].runner}, defect with {defect.runs[0].runner}"
        )
    if not defect.stable:
        return DefectOutcome(
            status="broken",
            detecting_cases=[],
            reason=f"unstable on the defect: {defect.first_difference}",
        )
    run = defect.runs[0]
    if run.classification in _BROKEN:
        return DefectOutcome(
            status="broken",
            detecting_cases=[],
            reason=f"{run.classification} on the defect: {run.reason}",
        )
    on_defect = {case.id: case.status for case in run.cases}
    failing = [
        case.id
        for case in baseline.runs[0].cases
        if case.status == "passed" and on_defect.get(case.id) in ("failed", "error")
    ]
    # A failure to import in any run is not evidence about behaviour: never a detection.
    import_only = {
        case.id for other in defect.runs for case in other.cases if case.failure_kind == "import"
    }
    detecting = [case_id for case_id in failing if case_id not in import_only]
    imports = [case_id for case_id in failing if case_id in import_only]
    if detecting:
        also = f" ({len(imports)} more fail only to import)" if imports else ""
        return DefectOutcome(
            status="detected",
            detecting_cases=detecting,
            import_failure_cases=imports,
            reason=f"{len(detecting)} reference-passing cases fail on the defect{also}",
        )
    if imports:
        return DefectOutcome(
            status="broken",
            detecting_cases=[],
            import_failure_cases=imports,
            reason=(
                f"the defect only breaks imports: all {len(imports)} reference-passing cases "
                f"that fail on it fail to import a module or a name in it, first {imports[0]}"
            ),
        )
    return DefectOutcome(
        status="survived",
        detecting_cases=[],
        reason="no case that passed on the reference failed on the defect",
    )
