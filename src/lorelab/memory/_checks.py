"""Running a Dream candidate's checks as real subprocesses in a disposable copy of the project.

Each check is an argv from ``shlex.split`` (never a shell), run in its own process group
with a timeout; on timeout the whole group is killed. Checks run in order and stop at the
first failure; the rest are recorded as ``not_run``, never dropped.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from lorelab.memory._models import CheckResult, SkillStep
from lorelab.memory._redact import Redactor
from lorelab.workspace import RunRoot

OUTPUT_TAIL_BYTES: Final = 2048
COPY_METHOD: Final = "lorelab.workspace.RunRoot.copy_project"


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """All results of one run of a candidate's checks."""

    passed: bool
    results: list[CheckResult]


def _not_run(step: SkillStep, status: Literal["error", "not_run"], error: str) -> CheckResult:
    """The result of a check whose command never ran (it could not start, or was not reached)."""
    return CheckResult(
        command=step.command,
        expected_exit_code=step.expected_exit_code,
        status=status,
        exit_code=None,
        duration_ms=None,
        output_tail="",
        error=error,
    )


def run_check(step: SkillStep, cwd: Path, timeout_seconds: float) -> CheckResult:
    """Run one check in ``cwd`` and say whether it returned its expected exit code."""

    def refused(error: str) -> CheckResult:
        return _not_run(step, "error", error)

    try:
        argv = shlex.split(step.command)
    except ValueError as exc:
        return refused(f"cannot split the command into arguments: {exc}")
    if not argv:
        return refused("empty command")
    # The process supervisor is loaded by the commands that run checks, not by every store user.
    from lorelab.io import run_process

    try:
        # A Dream check is a command a worker proposed: it runs sandboxed as far as this machine
        # allows, and nothing it starts outlives it.
        result = run_process(
            argv,
            cwd=cwd,
            env=os.environ,
            timeout_s=timeout_seconds,
            tail_bytes=OUTPUT_TAIL_BYTES,
            sandbox=True,
        )
    except OSError as exc:
        return refused(f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    tail = Redactor().redact(result.output_tail.decode("utf-8", errors="replace"))
    if result.timed_out:
        return CheckResult(
            command=step.command,
            expected_exit_code=step.expected_exit_code,
            status="timed_out",
            exit_code=None,
            duration_ms=result.duration_ms,
            output_tail=tail,
            sandbox=result.sandbox,
            error=f"timed out after {timeout_seconds:g} s; process group killed",
        )
    passed = result.exit_code == step.expected_exit_code
    return CheckResult(
        command=step.command,
        expected_exit_code=step.expected_exit_code,
        status="passed" if passed else "failed",
        exit_code=result.exit_code,
        duration_ms=result.duration_ms,
        output_tail=tail,
        sandbox=result.sandbox,
        error=None if result.signal is None else f"killed by {result.signal}",
    )


def run_checks(
    checks: Sequence[SkillStep], project_dir: str | os.PathLike[str], timeout_seconds: float
) -> CheckOutcome:
    """Copy ``project_dir`` into a fresh run root and run ``checks`` there, in order."""
    results: list[CheckResult] = []
    with RunRoot() as root:
        copy = root.copy_project(project_dir, "project")
        failed = False
        for step in checks:
            if failed:
                results.append(_not_run(step, "not_run", "an earlier check failed"))
                continue
            result = run_check(step, copy, timeout_seconds)
            results.append(result)
            failed = result.status != "passed"
    return CheckOutcome(passed=bool(results) and not failed, results=results)
