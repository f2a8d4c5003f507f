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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lorelab.errors import IntegrityFailure
from lorelab.evaluation.conditions._guidance import Guidance, guidance_for
from lorelab.evaluation.conditions._integrity import ServedCheck, check_served
from lorelab.evaluation.conditions._manifest import Condition, ConditionsManifest, TaskSpec
from lorelab.evaluation.conditions._one_run import (
    MEMORY_FAILURE,
    RunContext,
    _Attempts,
    _host_attempts,
    _Observed,
    count_failures,
    one_run,
    write_run,
)
from lorelab.evaluation.conditions._receipts import ConditionRun
from lorelab.evaluation.conditions._snapshot import Snapshot
from lorelab.evaluation.conditions._verify import VerifyReceipt, run_verify
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
    task: TaskSpec
    condition: Condition
    payload: dict[str, Any] | None
    run_host: bool


@dataclass(frozen=True, slots=True)
class UnitOutcome:
    """What a worker saw: the verifications, the host's attempts, the files changed."""

    before: VerifyReceipt
    after: VerifyReceipt
    attempts: _Attempts
    changed: list[str]
    worker: dict[str, Any]


def snapshot_digest(snapshot: Snapshot) -> str:
    """The SHA-256 of ``snapshot``'s files, computed as when it was taken."""
    digest = hashlib.sha256()
    for item in snapshot.files:
        digest.update(f"{item.path}\0{int(item.executable)}\0{len(item.data)}\0".encode())
        digest.update(item.data)
    return digest.hexdigest()


def execute_unit(unit: RunUnit) -> UnitOutcome:
    """On a worker: check the snapshot, run the task in a fresh copy, report what happened."""
    found = snapshot_digest(unit.snapshot)
    if found != unit.snapshot.sha256:
        raise IntegrityFailure(
            f"project snapshot on {socket.gethostname()}: sha256 {found}, expected "
            f"{unit.snapshot.sha256}; the run was not started"
        )
    host, task = unit.host, unit.task
    root = Path(tempfile.mkdtemp(prefix="lorelab-run-"))
    try:
        copy = unit.snapshot.materialise(root / f"{task.id}--{unit.condition}")
        before = run_verify(task.verify, copy, host.env, host.verify_timeout_s)
        attempts = (
            _host_attempts(host, task, copy, unit.payload, before) if unit.run_host else _Attempts()
        )
        if attempts.verifications and not attempts.failure:
            after = attempts.verifications[-1]
        else:
            after = run_verify(task.verify, copy, host.env, host.verify_timeout_s)
        changed = unit.snapshot.changed_files(copy)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    worker = {**worker_location(), "snapshotSha256Checked": found}
    return UnitOutcome(before, after, attempts, changed, worker)


@dataclass(frozen=True, slots=True)
class _Served:
    task: TaskSpec
    condition: Condition
    guidance: Guidance
    served: ServedCheck


async def _serve(ctx: RunContext, task: TaskSpec, condition: Condition) -> _Served:
    """Ask the memory for one run's guidance, as a sequential run does before its host."""
    guidance = await guidance_for(ctx.memory, task, condition)
    served = ServedCheck(checked=True)
    if guidance.served_ids and ctx.memory is not None:
        served = await check_served(
            ctx.memory, ctx.manifest, task, guidance.served_ids, guidance.brief_items
        )
    if guidance.error:
        ctx.memory_failures += 1
    return _Served(task, condition, guidance, served)


def _observed(ctx: RunContext, served: _Served, outcome: UnitOutcome | None) -> _Observed:
    guidance = served.guidance
    notes: list[str] = [guidance.note] if guidance.note else []
    if outcome is None:
        return _Observed(None, None, guidance, served.served, _Attempts(), [], notes)
    attempts = outcome.attempts
    if guidance.error:
        attempts = _Attempts(failure=MEMORY_FAILURE, failure_detail=guidance.error)
        notes.append(guidance.error)
    count_failures(ctx, attempts, notes)
    return _Observed(
        outcome.before, outcome.after, guidance, served.served, attempts, outcome.changed, notes
    )


def _lost_observed(ctx: RunContext, served: _Served, lost: Lost) -> _Observed:
    seen = _observed(ctx, served, None)
    seen.attempts.failure = EXECUTOR_FAILURE
    seen.attempts.failure_detail = lost.reason
    seen.notes.append(f"{EXECUTOR_FAILURE}: {lost.reason}; never retried, left out of comparisons")
    ctx.executor_failures += 1
    return seen


async def run_phase(ctx: RunContext, runs: list[tuple[TaskSpec, Condition]]) -> None:
    """Run ``runs`` (in sequential order) with the context's executor, or one after another."""
    executor = ctx.executor
    if executor is None or not executor.concurrent:
        for task, condition in runs:
            ctx.records.append(await one_run(ctx, task, condition))
        return
    served = [await _serve(ctx, task, condition) for task, condition in runs]
    host = HostParts(ctx.manifest, ctx.argv, ctx.identity, ctx.env, ctx.verify_timeout_s)
    units = [
        RunUnit(
            i, host, ctx.snapshot, s.task, s.condition, s.guidance.payload, not s.guidance.error
        )
        for i, s in enumerate(served)
    ]
    first = len(ctx.records)
    order: dict[int, int] = {}

    def done(unit: RunUnit, result: UnitOutcome | Lost) -> bool:
        one = served[unit.index]
        if isinstance(result, Lost):
            seen, worker = _lost_observed(ctx, one, result), None
        else:
            seen, worker = _observed(ctx, one, result), result.worker
        order[len(ctx.records)] = unit.index
        ctx.records.append(write_run(ctx, one.task, one.condition, seen, worker))
        return True

    def keep(_unit: RunUnit, found: Lost) -> UnitOutcome | Lost:
        return found

    execute: Callable[[RunUnit], UnitOutcome | Lost] = execute_unit
    executor.run(units, execute, done, lost=keep)
    # Receipts were written as runs ended; the runs file keeps the sequential order.
    ended = ctx.records[first:]
    by_index: dict[int, ConditionRun] = {order[first + k]: run for k, run in enumerate(ended)}
    ctx.records[first:] = [by_index[index] for index in sorted(by_index)]
