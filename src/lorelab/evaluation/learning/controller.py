"""The learning evaluation's controller: input, preflight, shared preparation, ground truth,
the counterbalanced trials, and the receipts of each, in that order.

Every phase writes its receipts through the run log the moment it has them; ``controller.json``
is written on success and on failure, with ``null`` for the phases that were not reached.
Trials run through a :mod:`lorelab.evaluation.executors` executor. Nothing is retried,
resumed or relabelled.
"""

from __future__ import annotations

import os
import platform
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import lorelab
from lorelab._model import LIVE, PROTOCOL_FIXTURE, EvidenceKind
from lorelab.errors import InputFileError, UsageError
from lorelab.evaluation.executors import SequentialExecutor, TrialExecutor
from lorelab.evaluation.learning._distributed import run_concurrently
from lorelab.evaluation.learning._preparation import (
    ground_truth,
    manifest_digest,
    preflight,
    shared_preparation,
    write_manifest,
)
from lorelab.evaluation.learning._state import (
    DEFAULT_REPEAT,
    DEFAULT_STABILITY_RUNS,
    ROLE_CALLS_PER_TRIAL,
    LearningRequest,
    LearningRun,
    Phases,
    Progress,
)
from lorelab.evaluation.learning._trial import forbidden_texts, run_trial
from lorelab.evaluation.learning.manifest import LearningManifest
from lorelab.evaluation.learning.records import (
    ControllerRecord,
    PreflightReceipt,
    RoleWorker,
    ScheduledTrial,
    Settings,
    Summary,
    TrialPayloads,
    TrialRecord,
    run_arms,
)
from lorelab.evaluation.learning.roles import TEST_ROLES, PerRole
from lorelab.evaluation.learning.schedule import schedule
from lorelab.evaluation.learning.summary import build_summary, summary_markdown
from lorelab.evaluation.learning.verify import hash_receipts
from lorelab.evaluation.runlog import RunLog
from lorelab.io import require_sandbox
from lorelab.workers import MAX_OUTPUT_BYTES_CAP, MAX_TIMEOUT_MS, check_endpoints

MAX_CALLS_CAP: Final = 360
CONTROLLER_FILE: Final = "controller.json"
TRIALS_DIR: Final = "trials"
PRIVATE_DIR: Final = "private"
PROGRAM: Final = "lorelab eval learning"

__all__ = [
    "DEFAULT_REPEAT",
    "DEFAULT_STABILITY_RUNS",
    "LearningOutcome",
    "LearningRequest",
    "manifest_digest",
    "read_manifest_input",
    "resolve_settings",
    "run_learning",
]


@dataclass(frozen=True, slots=True)
class LearningOutcome:
    """How the run ended: its exit code, one line, and the summary when it got that far."""

    exit_code: int
    message: str
    summary: Summary | None


def resolve_settings(request: LearningRequest) -> tuple[Settings, EvidenceKind]:
    """Check every setting against its bounds; raise :class:`UsageError` naming the first."""
    specs = len(request.manifest.fixtures)
    if not 1 <= request.repeat <= 5:
        raise UsageError(f"--repeat {request.repeat}: must be between 1 and 5")
    if not 2 <= request.stability_runs <= 5:
        raise UsageError(f"--stability-runs {request.stability_runs}: must be between 2 and 5")
    bounds = request.bounds
    if not 1 <= bounds.timeout_ms <= MAX_TIMEOUT_MS:
        raise UsageError(f"--timeout-ms {bounds.timeout_ms}: must be between 1 and 120000")
    if not 1 <= bounds.max_output_bytes <= MAX_OUTPUT_BYTES_CAP:
        raise UsageError(
            f"--max-output-bytes {bounds.max_output_bytes}: must be between 1 and "
            f"{MAX_OUTPUT_BYTES_CAP} (what the transport can hold)"
        )
    arms = len(run_arms(request.control))
    required = ROLE_CALLS_PER_TRIAL * specs * request.repeat * arms
    max_calls = required if request.max_calls is None else request.max_calls
    if max_calls > MAX_CALLS_CAP:
        raise UsageError(
            f"--max-calls {max_calls}: at most {MAX_CALLS_CAP} role calls per run "
            f"({specs} specifications x {request.repeat} repetitions x {arms} arms x 3 calls "
            f"= {required})"
        )
    if max_calls < required:
        raise UsageError(
            f"--max-calls {max_calls} does not cover 3 role calls x {specs} specifications x "
            f"{request.repeat} repetitions x {arms} arms = {required}; the run was not started"
        )
    roles = request.roles
    fixture_roles = roles.fixture_roles()
    if fixture_roles and request.evidence_kind == LIVE:
        raise UsageError(
            "--evidence-kind live: the fixture adapter always runs as protocol-fixture "
            f"(it plays the {', '.join(fixture_roles)} role)"
        )
    kind: EvidenceKind = PROTOCOL_FIXTURE if fixture_roles else (request.evidence_kind or LIVE)
    # Reference suites and generated tests are untrusted code: no working sandbox, no run;
    # unless every role is the shipped protocol fixture on a shipped dataset (the README's
    # main job), where all the code that runs ships with lorelab.
    shipped = len(fixture_roles) == len(list(roles.items())) and not request.dataset.startswith(
        "manifest:"
    )
    confinement = require_sandbox(
        PROGRAM,
        allow_unsandboxed=request.allow_unsandboxed,
        shipped_only=(
            f"every role is the shipped protocol fixture and dataset {request.dataset} ships "
            "with lorelab"
            if shipped
            else None
        ),
    )
    seed = request.seed if request.seed is not None else secrets.randbelow(2**31)
    kinds = roles.kinds()
    workers = {role: RoleWorker(argv=list(argv), kind=kinds[role]) for role, argv in roles.items()}
    settings = Settings(
        agent=list(request.agent),
        roles=PerRole[RoleWorker](**workers),
        repeat=request.repeat,
        seed=seed,
        seed_given=request.seed is not None,
        max_calls=max_calls,
        required_calls=required,
        max_output_bytes=bounds.max_output_bytes,
        timeout_ms=bounds.timeout_ms,
        stability_runs=request.stability_runs,
        test_timeout_s=request.test_timeout_s,
        control=request.control,
        confinement=confinement,
    )
    return settings, kind


@contextmanager
def _timed() -> Iterator[Callable[[], int]]:
    start = time.perf_counter()
    yield lambda: int((time.perf_counter() - start) * 1000)


def run_learning(
    request: LearningRequest,
    output: str | os.PathLike[str],
    progress: Progress | None = None,
    executor: TrialExecutor | None = None,
) -> LearningOutcome:
    """Run the whole protocol into the fresh directory ``output``; return how it ended."""
    started = request.started if request.started is not None else time.perf_counter()
    say = progress or (lambda _message: None)
    settings, evidence_kind = resolve_settings(request)
    plan = schedule(
        [f.id for f in request.manifest.fixtures],
        settings.repeat,
        settings.seed,
        run_arms(settings.control),
    )
    # An endpoint that cannot be reached stops the run before anything is written (exit 2).
    check_endpoints(request.roles.argv(role) for role in TEST_ROLES)
    log = RunLog.start(output)
    run = LearningRun(
        request=request,
        settings=settings,
        evidence_kind=evidence_kind,
        log=log,
        progress=say,
        forbidden=forbidden_texts(request.manifest),
        phases=Phases(started=started),
    )
    phases = run.phases
    # Receipts say $WORKSPACE and $PRIVATE, not the random temporary names of this run.
    log.normalize_paths({run.scratch: "$WORKSPACE", run.private: "$PRIVATE"})
    try:
        outcome = _run(run, plan, executor or SequentialExecutor())
    except BaseException as exc:
        log.abort(CONTROLLER_FILE, exc, phases.stopped)
        raise
    else:
        log.finish(CONTROLLER_FILE, phases.receipt())
        return outcome
    finally:
        shutil.rmtree(run.scratch, ignore_errors=True)
        shutil.rmtree(run.private, ignore_errors=True)


def _prepare(run: LearningRun, plan: list[ScheduledTrial]) -> LearningOutcome | None:
    """Preflight, shared preparation and ground truth; an outcome when the run stops there."""
    phases = run.phases
    with _timed() as elapsed:
        failure = preflight(run, plan)
        error = str(failure) if failure is not None else None
        write_manifest(run, plan, error)
        phases.setup_ms = elapsed()
    run.log.write("preflight.json", PreflightReceipt(ok=error is None, error=error))
    if failure is not None:
        phases.outcome = "preflight-failed"
        # A worker that cannot start is bad configuration (exit 2); a binding failure is 3.
        return LearningOutcome(failure.exit_code, f"preflight failed: {error}", None)
    with _timed() as elapsed:
        shared_preparation(run)
        phases.shared_preparation_ms = elapsed()
    with _timed() as elapsed:
        failed = ground_truth(run)
        phases.ground_truth_ms = elapsed()
    if failed:
        phases.outcome = "ground-truth-failed"
        names = ", ".join(failed)
        return LearningOutcome(
            1, f"ground truth failed for {names}; see labels-*.json; no worker was called", None
        )
    return None


def trial_receipt_name(entry: ScheduledTrial) -> str:
    """The file name of one trial's receipt in ``trials/``."""
    return f"{entry.position:03d}-{entry.specification}-r{entry.repetition}-{entry.arm}.json"


def _payloads(entry: ScheduledTrial, record: TrialRecord) -> TrialPayloads:
    return TrialPayloads(
        position=entry.position,
        specification=entry.specification,
        repetition=entry.repetition,
        arm=entry.arm,
        calls=record.exchanges or [],
    )


def controller_record(run: LearningRun) -> ControllerRecord:
    """The summary's ``controller``: what ran the run, with manifest.json's settings, and the
    phase clock as of now."""
    clock = run.phases.receipt()
    written = run.manifest_receipt
    return ControllerRecord(
        program=PROGRAM,
        module=__name__,
        lorelab_version=written.lorelab_version if written else lorelab.__version__,
        python_version=platform.python_version(),
        dataset=run.request.dataset,
        settings=written.settings if written else run.settings,
        elapsed_ms=clock.elapsed_ms,
        setup_ms=clock.setup_ms,
        shared_preparation_ms=clock.shared_preparation_ms,
        ground_truth_ms=clock.ground_truth_ms,
        trials_ms=clock.trials_ms,
    )


def _leaked(record: TrialRecord) -> bool:
    scan = record.leak_scan
    return scan is not None and not (
        scan.payloads_clean and scan.trial_root_clean and scan.memory_clean
    )


def _run(run: LearningRun, plan: list[ScheduledTrial], executor: TrialExecutor) -> LearningOutcome:
    stopped = _prepare(run, plan)
    if stopped is not None:
        return stopped
    phases = run.phases
    run.log.group(TRIALS_DIR)
    run.log.group(PRIVATE_DIR)

    def done(entry: ScheduledTrial, record: TrialRecord) -> bool:
        name = trial_receipt_name(entry)
        run.log.unit(TRIALS_DIR, name, record)
        if record.exchanges is not None:
            run.log.unit(PRIVATE_DIR, name, _payloads(entry, record))
        run.progress(
            f"trial {entry.position}/{len(plan)} {entry.specification} r{entry.repetition} "
            f"{entry.arm}: {record.status}, {record.detected}/{record.defects_total} detected"
        )
        return not _leaked(record)

    with _timed() as elapsed:
        if executor.concurrent:
            records = run_concurrently(run, plan, executor, done)
        else:
            records = executor.run(plan, lambda entry: run_trial(run, entry), done)
        phases.trials_ms = elapsed()
    leaked = next((record for record in records if _leaked(record)), None)
    if leaked is not None:
        phases.outcome = "integrity-failed"
        return LearningOutcome(
            3, f"trial {leaked.position}: {leaked.reason}; the run was stopped", None
        )
    summary = build_summary(
        run.manifest,
        manifest_digest(run.manifest),
        run.evidence_kind,
        run.settings,
        records,
        frozen_lessons=run.frozen_lessons,
        executor=executor.describe(),
        concurrent=executor.concurrent,
        controller=controller_record(run),
        manifest_receipt=run.manifest_receipt,
        receipt_hashes=hash_receipts(run.log.path),
    )
    run.log.write("summary.json", summary)
    run.log.write_text("summary.md", summary_markdown(summary))
    unqualified = [r.position for r in records if r.status != "qualified"]
    phases.outcome = "complete"
    if unqualified:
        refused = [r for r in records if (r.reason or "").startswith("identity-changed")]
        # A refused trial was never judged: the line names the first change and the count.
        cause = f"{len(refused)} refused ({refused[0].reason}); " if refused else ""
        return LearningOutcome(
            1,
            f"{len(unqualified)} of {len(records)} trials did not qualify (positions "
            f"{unqualified}); {cause}label: {summary.paired.label}",
            summary,
        )
    return LearningOutcome(0, f"label: {summary.paired.label}", summary)


def read_manifest_input(path: str | None, dataset: str | None) -> tuple[LearningManifest, str]:
    """The manifest to run: a file (``--fixtures``) or a shipped dataset (``--dataset``)."""
    from lorelab.evaluation.learning.datasets import get_dataset
    from lorelab.evaluation.learning.manifest import load_manifest

    if path is not None and dataset is not None:
        raise UsageError("--fixtures and --dataset are mutually exclusive")
    if path is not None:
        if not Path(path).exists():
            raise InputFileError(f"{path}: no such file")
        # The file's name only: receipts never hold an absolute path of the manifest (its
        # content and hash are in manifest.json).
        return load_manifest(path), f"manifest:{Path(path).name}"
    name = dataset or "default"
    return get_dataset(name), name
