"""Runs side by side: ``--jobs N`` (local worker processes) or ``--executor ray`` (Ray tasks).

The memory under test stays with the coordinator. For each phase (baseline, memory_guided and
skill_planned for every task; then, after the Dream, dreaming for every task) the coordinator
first asks the memory for every run's guidance, in exactly the order a sequential run asks,
so the memory hands out the same briefs and plans under the same ids, and ``finalize`` finds
them in the primary store. Only then does it hand the runs out. A worker receives the frozen
project snapshot, the guidance payload and the bound host identity; it checks the snapshot's
SHA-256 before anything else, materialises its own copy, runs the verify command, the host's
attempts (the identity is checked before and after every call on that node) and the verify
command again, and sends back what it saw. The memory is never reachable from a worker, so
the holdout lock holds by construction and every run of a phase sees the memory as it was
when the phase began.

The coordinator writes every receipt, as each run ends, through the one run log. The runs
file lists the runs in sequential order, so it equals a sequential run's. A run whose worker
process or node died is recorded as ``executor-failure`` with the reason: never retried, and
left out of every comparison.
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from lorelab.errors import IntegrityFailure
from lorelab.evaluation.conditions._manifest import Condition, ConditionsManifest, TaskSpec
from lorelab.evaluation.conditions._one_run import (
    HostOutcome,
    RunContext,
    Served,
    _Observed,
    observed,
    one_run,
    run_in_copy,
    serve,
    write_run,
)
from lorelab.evaluation.conditions._receipts import ConditionRun
from lorelab.evaluation.conditions._snapshot import Snapshot
from lorelab.evaluation.executors import EXECUTOR_FAILURE, Lost, worker_location
from lorelab.workers import WorkerIdentity


@dataclass(frozen=True, slots=True)
class HostParts:
    """The parts of the run context a worker needs to run a host (see ``HostSide``)."""

    manifest: ConditionsManifest
    argv: list[str]
    identity: WorkerIdentity
    env: dict[str, str]
    verify_timeout_s: float


@dataclass(frozen=True, slots=True)
class RunUnit:
    """One task x condition as shipped to a worker."""

    index: int
    host: HostParts
    snapshot: Snapshot
    served: Served


def snapshot_digest(snapshot: Snapshot) -> str:
    """The SHA-256 of ``snapshot``'s files, computed as when it was taken."""
    digest = hashlib.sha256()
    for item in snapshot.files:
        digest.update(f"{item.path}\0{int(item.executable)}\0{len(item.data)}\0".encode())
        digest.update(item.data)
    return digest.hexdigest()


def execute_unit(unit: RunUnit) -> HostOutcome:
    """On a worker: check the snapshot, run the task in a fresh copy, report what happened."""
    found = snapshot_digest(unit.snapshot)
    if found != unit.snapshot.sha256:
        raise IntegrityFailure(
            f"project snapshot on {socket.gethostname()}: sha256 {found}, expected "
            f"{unit.snapshot.sha256}; the run was not started"
        )
    served = unit.served
    root = Path(tempfile.mkdtemp(prefix="lorelab-run-"))
    try:
        copy = root / f"{served.task.id}--{served.condition}"
        outcome = run_in_copy(unit.host, unit.snapshot, copy, served.task, served)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return replace(outcome, worker={**worker_location(), "snapshotSha256Checked": found})


def _lost_observed(ctx: RunContext, served: Served, lost: Lost) -> _Observed:
    seen = observed(ctx, served, None)
    seen.attempts.failure = EXECUTOR_FAILURE
    seen.attempts.failure_detail = lost.reason
    seen.notes.append(f"{EXECUTOR_FAILURE}: {lost.reason}; never retried, left out of comparisons")
    ctx.counts.executor_failures += 1
    return seen


async def run_phase(ctx: RunContext, runs: list[tuple[TaskSpec, Condition]]) -> None:
    """Run ``runs`` (in sequential order) with the context's executor, or one after another."""
    executor = ctx.executor
    if executor is None or not executor.concurrent:
        for task, condition in runs:
            ctx.records.append(await one_run(ctx, task, condition))
        return
    host = HostParts(ctx.manifest, ctx.argv, ctx.identity, ctx.env, ctx.verify_timeout_s)
    units = [
        RunUnit(i, host, ctx.snapshot, await serve(ctx, task, condition))
        for i, (task, condition) in enumerate(runs)
    ]
    first = len(ctx.records)
    order: dict[int, int] = {}

    def done(unit: RunUnit, result: HostOutcome | Lost) -> bool:
        one = unit.served
        if isinstance(result, Lost):
            seen, worker = _lost_observed(ctx, one, result), None
        else:
            seen, worker = observed(ctx, one, result), result.worker
        order[len(ctx.records)] = unit.index
        ctx.records.append(write_run(ctx, one.task, one.condition, seen, worker))
        return True

    def keep(_unit: RunUnit, found: Lost) -> HostOutcome | Lost:
        return found

    execute: Callable[[RunUnit], HostOutcome | Lost] = execute_unit
    executor.run(units, execute, done, lost=keep)
    # Receipts were written as runs ended; the runs file keeps the sequential order.
    ended = ctx.records[first:]
    by_index: dict[int, ConditionRun] = {order[first + k]: run for k, run in enumerate(ended)}
    ctx.records[first:] = [by_index[index] for index in sorted(by_index)]
