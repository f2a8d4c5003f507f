"""Trials side by side: ``lorelab eval learning run --jobs N`` or ``--executor ray``.

The schedule (shuffle and counterbalancing) is decided up front exactly as for a sequential
run, and recorded in ``manifest.json`` before any trial. A concurrent executor receives, per
trial, a picklable kit: the request, the settings, the bound worker identity, the texts that
must never reach a worker, and the frozen memory store's bytes with its SHA-256. On the
worker's node the trial runs as it would here: its own disposable project, a private copy of
the frozen store whose hash is checked before recall, the identity checked before the first
call and after each call (a node whose worker files hash differently fails its trials there,
recorded as ``invalid`` with the changes, never skipped). The record comes back to the
coordinator, which writes the receipt. A trial whose process or node died is recorded as
``failed`` with reason ``executor-failure: ...`` and counts zero, never retried.

Trials running side by side compete for the machine, so their latencies are not comparable:
the summary keeps every recall figure and marks its time comparisons ``confounded``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from lorelab._model import EvidenceKind
from lorelab.evaluation.executors import EXECUTOR_FAILURE, Lost, TrialExecutor, worker_location
from lorelab.evaluation.learning._state import LearningRequest, LearningRun
from lorelab.evaluation.learning._trial import role_workers, run_trial
from lorelab.evaluation.learning.records import (
    BYTE_ACCOUNTING,
    ScheduledTrial,
    Settings,
    TrialRecord,
)
from lorelab.evaluation.learning.roles import PerRole
from lorelab.evaluation.runlog import RunLog
from lorelab.io import ReceiptDir
from lorelab.workers import WorkerIdentity


@dataclass(frozen=True, slots=True)
class TrialKit:
    """What a worker needs to run any trial of one run (shipped with each trial)."""

    request: LearningRequest
    settings: Settings
    evidence_kind: EvidenceKind
    forbidden: list[str]
    identities: PerRole[WorkerIdentity] | None
    frozen_store: bytes | None
    frozen_sha256: str | None
    written_paths: dict[str, str]


@dataclass(frozen=True, slots=True)
class TrialUnit:
    """One scheduled trial as shipped to a worker."""

    kit: TrialKit
    entry: ScheduledTrial


def trial_kit(run: LearningRun) -> TrialKit:
    """The kit of ``run``, after preparation (the frozen store is read once, here)."""
    frozen = run.frozen_store.read_bytes() if run.frozen_store is not None else None
    return TrialKit(
        run.request,
        run.settings,
        run.evidence_kind,
        run.forbidden,
        run.identities,
        frozen,
        run.frozen_sha256,
        run.log.written_paths,
    )


def execute_trial(unit: TrialUnit) -> TrialRecord:
    """On a worker: run one trial as the controller would, in this node's own directories."""
    kit = unit.kit
    # Trials never write receipts; the coordinator does, from the record sent back. The log
    # here has no directory: it only renders receipts as the coordinator writes them (the
    # identity digests a trial records are of the identity as manifest.json holds it).
    log = RunLog(cast(ReceiptDir, None))
    log.normalize_paths(dict(kit.written_paths.items()))
    run = LearningRun(
        request=kit.request,
        settings=kit.settings,
        evidence_kind=kit.evidence_kind,
        log=log,
        progress=lambda _message: None,
        forbidden=kit.forbidden,
        identities=kit.identities,
        frozen_sha256=kit.frozen_sha256,
    )
    try:
        if kit.frozen_store is not None:
            run.frozen_store = (
                Path(tempfile.mkdtemp(prefix="frozen-", dir=run.private)) / "memory.db"
            )
            run.frozen_store.write_bytes(kit.frozen_store)
        record = run_trial(run, unit.entry)
    finally:
        shutil.rmtree(run.scratch, ignore_errors=True)
        shutil.rmtree(run.private, ignore_errors=True)
    return record.model_copy(update={"worker": worker_location()})


def lost_trial(unit: TrialUnit, lost: Lost, run: LearningRun) -> TrialRecord:
    """The record of a trial whose process or node died: failed, counted zero."""
    entry = unit.entry
    fixture = next(f for f in unit.kit.request.manifest.fixtures if f.id == entry.specification)
    return TrialRecord(
        position=entry.position,
        specification=entry.specification,
        repetition=entry.repetition,
        arm=entry.arm,
        status="failed",
        complete=False,
        reason=f"{EXECUTOR_FAILURE}: {lost.reason}; never retried",
        identity_checks=[],
        role_workers=role_workers(run),
        memory_store_sha256=None,
        lessons_recalled=[],
        lessons_below_floor=[],
        lessons_reached_author=[],
        generation=None,
        validation=None,
        generated_baseline_cases=[],
        passing_cases=0,
        defects=[],
        defects_total=len(fixture.defects),
        detected=0,
        recall=0.0,
        leak_scan=None,
        setup_ms=None,
        retrieval_ms=None,
        generation_ms=None,
        validation_ms=None,
        total_ms=0,
        byte_accounting=dict(BYTE_ACCOUNTING),
    )


def run_concurrently(
    run: LearningRun,
    plan: list[ScheduledTrial],
    executor: TrialExecutor,
    done: Callable[[ScheduledTrial, TrialRecord], bool],
) -> list[TrialRecord]:
    """Run ``plan`` with a concurrent ``executor``; ``done`` writes each receipt here."""
    kit = trial_kit(run)
    units = [TrialUnit(kit, entry) for entry in plan]
    records = executor.run(
        units,
        execute_trial,
        lambda unit, record: done(unit.entry, record),
        lost=lambda unit, why: lost_trial(unit, why, run),
    )
    run.calls_used += sum(len(r.generation.roles) for r in records if r.generation)
    return records
