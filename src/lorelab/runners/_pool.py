"""Independent executions on a bounded thread pool: results in input order, one job a directory.

Each job is a subprocess in its own project directory, so threads only wait; outcomes are the
same as running the jobs one by one because no two jobs share a directory (that is refused).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final, overload

from lorelab.errors import UsageError
from lorelab.io import ProcessScope
from lorelab.runners._base import TestRunner, check_project, check_timeout
from lorelab.runners._models import Execution, Stability
from lorelab.runners._stability import check_runs, run_stability

MAX_WORKERS: Final = 64


@dataclass(frozen=True, slots=True)
class ExecutionJob:
    """Run ``project``'s suite once."""

    runner: TestRunner
    project: Path
    timeout_s: float
    reverse: bool = False


@dataclass(frozen=True, slots=True)
class StabilityJob:
    """Run ``project``'s suite ``runs`` times in a row and judge its stability."""

    runner: TestRunner
    project: Path
    runs: int
    timeout_s: float
    reverse: bool = False


Job = ExecutionJob | StabilityJob


def default_workers() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # platforms without sched_getaffinity
        return os.cpu_count() or 1


def _check_directories(projects: Sequence[Path]) -> None:
    seen: list[Path] = []
    for project in projects:
        for other in seen:
            if project == other or project.is_relative_to(other) or other.is_relative_to(project):
                raise UsageError(
                    f"jobs share a directory ({other} and {project}); "
                    "parallel executions must each have their own project"
                )
        seen.append(project)


def _run(job: Job, project: Path) -> Execution | Stability:
    if isinstance(job, ExecutionJob):
        return job.runner.run(project, timeout_s=job.timeout_s, reverse=job.reverse)
    return run_stability(
        job.runner, project, runs=job.runs, timeout_s=job.timeout_s, reverse=job.reverse
    )


@overload
def run_parallel(
    jobs: Sequence[ExecutionJob], *, max_workers: int | None = None
) -> list[Execution]: ...
@overload
def run_parallel(
    jobs: Sequence[StabilityJob], *, max_workers: int | None = None
) -> list[Stability]: ...
@overload
def run_parallel(
    jobs: Sequence[Job], *, max_workers: int | None = None
) -> list[Execution | Stability]: ...
def run_parallel(
    jobs: Sequence[Job], *, max_workers: int | None = None
) -> list[Execution] | list[Stability] | list[Execution | Stability]:
    """Run independent jobs on at most ``max_workers`` threads; results in input order.

    Every job is checked before any starts: its project must exist, and no two jobs may use
    the same directory or one inside another. ``max_workers`` defaults to the usable CPUs.
    If a job raises, or the caller is interrupted (Ctrl-C, SIGTERM), jobs not yet started are
    cancelled, the process groups of running jobs are killed at once (not left to run to
    their timeouts), and the error is raised.
    """
    workers = default_workers() if max_workers is None else max_workers
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise UsageError(
            f"max_workers {max_workers!r}: must be a whole number from 1 to {MAX_WORKERS}"
        )
    projects = []
    for job in jobs:
        check_timeout(job.timeout_s)
        if isinstance(job, StabilityJob):
            check_runs(job.runs)
        projects.append(check_project(job.project))
    _check_directories(projects)
    if not jobs:
        return []
    pool = ThreadPoolExecutor(max_workers=min(workers, len(jobs)), thread_name_prefix="lorelab-run")
    futures: list[Future[Execution | Stability]] = []
    scope = ProcessScope()
    run = scope.bind(_run)
    try:
        futures = [
            pool.submit(run, job, project) for job, project in zip(jobs, projects, strict=True)
        ]
        results = [future.result() for future in futures]
    except BaseException:
        # Interrupts reach only this thread: kill what the pool threads started, then wait.
        scope.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results
