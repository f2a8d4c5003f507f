"""Before any trial: bind every role's worker identity (preflight), validate the history into the
frozen store (shared preparation), and check every fixture's labels (ground truth)."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import lorelab
from lorelab.errors import LorelabError, PreflightError, WorkerUnavailable
from lorelab.evaluation.learning._state import POOL_WORKERS, LearningRun
from lorelab.evaluation.learning.manifest import Fixture, LearningManifest
from lorelab.evaluation.learning.records import (
    HistoryItem,
    HistoryValidation,
    LabelsReceipt,
    ManifestReceipt,
    ScheduledTrial,
    SharedPreparation,
)
from lorelab.evaluation.learning.roles import bind_roles, check_startable
from lorelab.io import canonical_bytes, sha256_bytes
from lorelab.memory import LessonsRequest, SnapshotRequest, open_store
from lorelab.runners import Execution, ProcessScope, assess
from lorelab.testgen import HistoricalExample, lesson_request, validate_example
from lorelab.workers import VERIFICATION_SCOPE, implementation_hashes
from lorelab.workspace import FileEntry, RunRoot

FROZEN_STORE_RECEIPT = "memory-frozen.sqlite"


def manifest_digest(manifest: LearningManifest) -> str:
    """SHA-256 of the manifest's canonical JSON (so a dataset and its export hash alike)."""
    return sha256_bytes(canonical_bytes(manifest))


def fixture_files(fixture: Fixture, defect_id: str | None = None) -> list[FileEntry]:
    """The fixture's source files, with ``defect_id``'s replacements when given."""
    if defect_id is None:
        return list(fixture.files)
    defect = next(d for d in fixture.defects if d.id == defect_id)
    replaced = {entry.path: entry for entry in defect.files}
    return [replaced.get(entry.path, entry) for entry in fixture.files]


def write_manifest(run: LearningRun, plan: list[ScheduledTrial], error: str | None) -> None:
    """Write ``manifest.json``: what is run, how, by which worker and implementation, and the
    frozen manifest itself; the summary repeats its identity, scope and hashes from here."""
    run.manifest_receipt = ManifestReceipt(
        lorelab_version=lorelab.__version__,
        manifest_id=run.manifest.id,
        manifest_sha256=manifest_digest(run.manifest),
        dataset=run.request.dataset,
        runner=run.manifest.runner,
        settings=run.settings,
        order_seed=run.settings.seed,
        evidence_kind=run.evidence_kind,
        worker_identity=run.identities.author if run.identities is not None else None,
        role_identities=run.identities,
        worker_identity_error=error,
        verification_scope=dict(VERIFICATION_SCOPE),
        implementation_hashes=implementation_hashes(),
        schedule=plan,
        manifest=run.manifest,
    )
    run.log.write("manifest.json", run.manifest_receipt)


def preflight(run: LearningRun, plan: list[ScheduledTrial]) -> LorelabError | None:
    """Bind every role's worker identity in a cwd shaped like the first trial's, and check
    that every worker can start; None when ok.

    Roles that share a worker share one binding; ``workerIdentity`` stays the author's. A
    worker that cannot start is a :class:`WorkerUnavailable` (exit 2); its identity is kept.
    """
    first = run.fixture(plan[0].specification)
    with RunRoot(run.scratch) as root:
        cwd = root.create_project("preflight", first.files)
        try:
            run.identities = bind_roles(
                run.request.roles, cwd=cwd, operator_identity=run.request.operator_identity
            )
        except LorelabError as exc:
            return exc
    try:
        check_startable(run.request.roles, run.identities, os.environ)
    except WorkerUnavailable as exc:
        return exc
    if run.manifest.runner == "node" and shutil.which("node") is None:
        return PreflightError("the manifest's runner is node, but node is not on PATH")
    return None


def shared_preparation(run: LearningRun) -> None:
    """Validate every history entry; freeze the valid ones as lessons in a store snapshot."""
    items: list[HistoryItem] = []
    home = run.private / "frozen-home"
    manifest = run.manifest
    store = open_store(home)
    try:
        with RunRoot(run.scratch) as root:
            for entry in manifest.history:
                example = HistoricalExample(
                    id=entry.id,
                    specification_id=entry.specification_id,
                    requirements=entry.requirements,
                    runner=manifest.runner,
                    files=entry.files,
                    tests=entry.tests,
                )
                validation = validate_example(
                    example,
                    root,
                    runs=run.settings.stability_runs,
                    timeout_s=run.settings.test_timeout_s,
                    plugin_autoload=False,
                )
                items.append(
                    HistoryItem(
                        id=entry.id,
                        valid=validation.valid,
                        reason=validation.reason,
                        stability=validation.stability,
                    )
                )
                run.progress(f"history {entry.id}: {'valid' if validation.valid else 'refused'}")
                if validation.valid:
                    store.add_lesson(
                        lesson_request(
                            example, run.settings.stability_runs, {"reason": validation.reason}
                        )
                    )
        run.frozen_lessons = len(store.list_lessons(LessonsRequest()).lessons)
        snapshot = run.private / "frozen.db"
        run.frozen_sha256 = store.snapshot(SnapshotRequest(path=str(snapshot))).sha256
    finally:
        store.close()
    shutil.rmtree(home)
    run.frozen_store = snapshot
    run.log.write("history-validation.json", HistoryValidation(items=items))
    run.log.write_bytes(FROZEN_STORE_RECEIPT, snapshot.read_bytes())
    run.log.write(
        "shared-preparation.json",
        SharedPreparation(
            frozen_store_sha256=run.frozen_sha256,
            frozen_store_receipt=FROZEN_STORE_RECEIPT,
            lessons=[item.id for item in items if item.valid],
            refused_history=[item.id for item in items if not item.valid],
        ),
    )


def label_problem(
    fixture: Fixture, variants: list[tuple[str | None, list[Execution]]]
) -> str | None:
    """Why a fixture's labels do not hold (None when they do), from its ground-truth runs."""
    for defect_id, runs in variants:
        stability = assess(runs)
        what = "reference" if defect_id is None else f"defect {defect_id}"
        if not stability.stable:
            return f"{what}: unstable ({stability.first_difference})"
        run = runs[0]
        if defect_id is None:
            if run.classification != "passed":
                return f"reference tests on the reference source: {run.classification}"
            continue
        expected = set(next(d for d in fixture.defects if d.id == defect_id).expected_failing_cases)
        failing = {case.id for case in run.cases if case.status in ("failed", "error")}
        if run.classification != "failed":
            return f"{what}: {run.classification}, expected failing cases {sorted(expected)}"
        if failing != expected:
            return f"{what}: failed {sorted(failing)}, expected exactly {sorted(expected)}"
        imports = sorted(case.id for case in run.cases if case.failure_kind == "import")
        if imports:
            return f"{what}: {imports} fail only to import; a defect must break behaviour"
        if any(case.status != "passed" for case in run.cases if case.id not in expected):
            return f"{what}: a case outside its expected failures did not pass"
    return None


Variant = tuple[Fixture, str | None, Path]


def _ground_truth_runs(run: LearningRun) -> dict[str, list[tuple[str | None, list[Execution]]]]:
    """Run every fixture variant's reference tests ``stabilityRuns`` times, receipts as they end."""
    run.log.group("ground-truth")  # created before the pool's threads write into it
    with RunRoot(run.scratch) as root:
        variants: list[Variant] = []
        for fixture in run.manifest.fixtures:
            for defect_id in [None, *(d.id for d in fixture.defects)]:
                name = f"{fixture.id}.{defect_id or 'reference'}"
                files = fixture_files(fixture, defect_id) + list(fixture.reference_tests)
                variants.append((fixture, defect_id, root.create_project(name, files)))

        def run_variant(item: Variant) -> list[Execution]:
            fixture, defect_id, project = item
            runs = []
            for number in range(1, run.settings.stability_runs + 1):
                execution = run.runner.run(project, timeout_s=run.settings.test_timeout_s)
                name = f"{fixture.id}.{defect_id or 'reference'}.run{number}.json"
                run.log.unit("ground-truth", name, execution)
                runs.append(execution)
            run.progress(f"ground truth run {fixture.id} {defect_id or 'reference'}")
            return runs

        # The scope is entered inside the pool's block so that, on an interrupt, it kills
        # the running test processes before the pool waits for its threads.
        with ThreadPoolExecutor(max_workers=POOL_WORKERS) as pool, ProcessScope() as scope:
            executions = list(pool.map(scope.bind(run_variant), variants))
    by_fixture: dict[str, list[tuple[str | None, list[Execution]]]] = {}
    for (fixture, defect_id, _), runs in zip(variants, executions, strict=True):
        by_fixture.setdefault(fixture.id, []).append((defect_id, runs))
    return by_fixture


def ground_truth(run: LearningRun) -> list[str]:
    """Check every fixture's labels; return the ids of fixtures whose labels failed."""
    by_fixture = _ground_truth_runs(run)
    failed: list[str] = []
    for fixture in run.manifest.fixtures:
        reason = label_problem(fixture, by_fixture[fixture.id])
        run.progress(f"ground truth {fixture.id}: {reason or 'holds'}")
        if reason is not None:
            failed.append(fixture.id)
            run.log.write(
                f"labels-{fixture.id}.json",
                LabelsReceipt(
                    fixture=fixture.id,
                    reason=reason,
                    executions={
                        (defect_id or "reference"): runs
                        for defect_id, runs in by_fixture[fixture.id]
                    },
                ),
            )
    return failed
