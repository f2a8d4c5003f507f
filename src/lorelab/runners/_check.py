"""A flakiness check users can run on their own projects: one suite, N runs, one report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from lorelab._model import RecordModel, RunnerName
from lorelab.io import SandboxKind, sandbox_kind
from lorelab.runners._base import check_project, check_timeout
from lorelab.runners._models import (
    Case,
    Classification,
    Stability,
    StabilityClassification,
)
from lorelab.runners._select import detect_runner, get_runner
from lorelab.runners._stability import check_runs, run_stability


class RunSummary(RecordModel):
    """One run of the suite, as ``lorelab tests run --json`` prints it."""

    exit_code: int | None = Field(description="The run's exit status; null if killed.")
    duration_ms: int = Field(description="Wall-clock milliseconds of the run.")
    classification: Classification = Field(description="The run's own classification.")
    reason: str = Field(description="Why the run got its classification.")
    cases: list[Case] = Field(description="Every case with its status, in reporting order.")


class SuiteReport(RecordModel):
    """What ``lorelab tests run --json`` prints."""

    schema_version: Literal[1] = Field(
        default=1, description="Version of this document's JSON shape."
    )
    runner: RunnerName = Field(description="The runner used.")
    runner_chosen_by: str = Field(description="'--runner' or why the runner was detected.")
    classification: StabilityClassification = Field(
        description="The shared classification of a stable suite, or 'unstable'."
    )
    stable: bool = Field(description="Whether case ids, statuses and exit codes agreed.")
    runs: list[RunSummary] = Field(description="Every run, in order.")
    flaky_cases: list[str] = Field(description="Cases whose status differed between runs.")
    first_difference: str | None = Field(description="The first disagreement, or null.")
    sandbox: SandboxKind = Field(
        description=(
            "The confinement the runs really had: 'bubblewrap', 'partial' or 'none' (see "
            "docs/security.md); every run is contained (nothing it starts survives) either way."
        )
    )


@dataclass(frozen=True, slots=True)
class SuiteCheck:
    """The result of :func:`check_suite`: the full stability record and its summary."""

    stability: Stability
    report: SuiteReport

    @property
    def ok(self) -> bool:
        """Stable and passing: what ``lorelab tests run`` exits 0 for."""
        return self.report.stable and self.report.classification == "passed"


def check_suite(
    project: Path, *, runner: str | None, runs: int, timeout_s: float, sandbox: bool = False
) -> SuiteCheck:
    """Run ``project``'s suite ``runs`` times with ``runner`` (detected when None) and judge it.

    Every argument is checked before anything runs. ``sandbox`` runs the suite in bubblewrap as
    far as this machine allows; the report says what it got.
    """
    root = check_project(project)
    check_runs(runs)
    check_timeout(timeout_s)
    if runner is None:
        name, because = detect_runner(root)
    else:
        name, because = get_runner(runner).name, "--runner"
    stability = run_stability(
        get_runner(name, sandbox=sandbox), root, runs=runs, timeout_s=timeout_s
    )
    report = SuiteReport(
        runner=name,
        runner_chosen_by=because,
        classification=stability.classification,
        stable=stability.stable,
        # Each run's summary is the execution's own fields of the same names.
        runs=[RunSummary.model_validate(run, from_attributes=True) for run in stability.runs],
        flaky_cases=stability.flaky_cases,
        first_difference=stability.first_difference,
        sandbox=sandbox_kind(sandbox),
    )
    return SuiteCheck(stability=stability, report=report)
