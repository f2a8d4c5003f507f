"""Running a Dream candidate's checks as real subprocesses in a disposable copy of the project.

Each check is an argv from ``shlex.split`` (never a shell), run in its own process group
with a timeout; on timeout the whole group is killed. Checks run in order and stop at the
first failure; the rest are recorded as ``not_run``, never dropped.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

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


def _tail(sink: BinaryIO) -> str:
    size = sink.seek(0, os.SEEK_END)
    sink.seek(max(0, size - OUTPUT_TAIL_BYTES))
    text = sink.read(OUTPUT_TAIL_BYTES).decode("utf-8", errors="replace")
    return Redactor().redact(text)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_check(step: SkillStep, cwd: Path, timeout_seconds: float) -> CheckResult:
    """Run one check in ``cwd`` and say whether it returned its expected exit code."""
    try:
        argv = shlex.split(step.command)
    except ValueError as exc:
        return CheckResult(
            command=step.command,
            expected_exit_code=step.expected_exit_code,
            status="error",
            exit_code=None,
            duration_ms=None,
            output_tail="",
            error=f"cannot split the command into arguments: {exc}",
        )
    if not argv:
        return CheckResult(
            command=step.command,
            expected_exit_code=step.expected_exit_code,
            status="error",
            exit_code=None,
            duration_ms=None,
            output_tail="",
            error="empty command",
        )
    started = time.monotonic()
    # Output goes to a temporary file, so a chatty check cannot exhaust memory; only the
    # tail is kept.
    with tempfile.TemporaryFile() as sink:
        try:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return CheckResult(
                command=step.command,
                expected_exit_code=step.expected_exit_code,
                status="error",
                exit_code=None,
                duration_ms=None,
                output_tail="",
                error=f"cannot start {argv[0]!r}: {exc.strerror or exc}",
            )
        timed_out = False
        try:
            process.wait(timeout=timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            process.wait()
        finally:
            # A check may leave children behind; they die with its process group.
            _kill_group(process)
        duration = round((time.monotonic() - started) * 1000)
        tail = _tail(sink)
    if timed_out:
        return CheckResult(
            command=step.command,
            expected_exit_code=step.expected_exit_code,
            status="timed_out",
            exit_code=None,
            duration_ms=duration,
            output_tail=tail,
            error=f"timed out after {timeout_seconds:g} s; process group killed",
        )
    passed = process.returncode == step.expected_exit_code
    return CheckResult(
        command=step.command,
        expected_exit_code=step.expected_exit_code,
        status="passed" if passed else "failed",
        exit_code=process.returncode,
        duration_ms=duration,
        output_tail=tail,
        error=None,
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
                results.append(
                    CheckResult(
                        command=step.command,
                        expected_exit_code=step.expected_exit_code,
                        status="not_run",
                        exit_code=None,
                        duration_ms=None,
                        output_tail="",
                        error="an earlier check failed",
                    )
                )
                continue
            result = run_check(step, copy, timeout_seconds)
            results.append(result)
            failed = result.status != "passed"
    return CheckOutcome(passed=bool(results) and not failed, results=results)
