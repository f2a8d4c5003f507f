"""The learning evaluation's controller: input, preflight, shared preparation, ground truth,
the counterbalanced trials, and the receipts of each, in that order.

Every phase writes its receipts the moment it has them; ``controller.json`` is written on
success and on failure, with ``null`` for the phases that were not reached. Nothing is
retried, resumed or relabelled.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import lorelab
from lorelab.errors import InputFileError, IntegrityFailure, LorelabError, UsageError
from lorelab.evaluation.learning.manifest import Fixture, LearningManifest
from lorelab.evaluation.learning.records import (
    ACCOUNTING_VERSION,
    BYTE_ACCOUNTING,
    Arm,
    DefectResult,
    EvidenceKind,
    LeakScan,
    ScheduledTrial,
    Settings,
    Summary,
    TrialRecord,
)
from lorelab.evaluation.learning.schedule import schedule
from lorelab.evaluation.learning.summary import build_summary, summary_markdown
from lorelab.io import (
    LAUNCHER_HASH_CAP,
    ReceiptDir,
    canonical_bytes,
    create_output_dir,
    sha256_bytes,
    sha256_file,
)
from lorelab.memory import AddLessonRequest, LessonsRequest, SnapshotRequest, open_store
from lorelab.runners import (
    Execution,
    ProcessScope,
    StabilityJob,
    assess,
    detect,
    get_runner,
    is_valid_baseline,
    run_parallel,
)
from lorelab.testgen import (
    CallSettings,
    Generation,
    GenerationTask,
    HistoricalExample,
    Recall,
    recall_lessons,
    validate_candidates,
    validate_example,
)
from lorelab.testgen import generate as generate_tests
from lorelab.workers import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    VERIFICATION_SCOPE,
    WorkerIdentity,
    bind_identity,
    check_identity,
    implementation_hashes,
    is_fixture_agent,
)
from lorelab.workspace import FileEntry, RunRoot

MAX_CALLS_CAP: Final = 360
ROLE_CALLS_PER_TRIAL: Final = 3
DEFAULT_REPEAT: Final = 3
DEFAULT_STABILITY_RUNS: Final = 2
DEFAULT_TEST_TIMEOUT_S: Final = 60.0
POOL_WORKERS: Final = 2

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class LearningRequest:
    """What ``lorelab eval learning`` was asked to do, before any check."""

    manifest: LearningManifest
    dataset: str
    agent: tuple[str, ...]
    operator_identity: str | None = None
    repeat: int = DEFAULT_REPEAT
    seed: int | None = None
    max_calls: int | None = None
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    stability_runs: int = DEFAULT_STABILITY_RUNS
    evidence_kind: EvidenceKind | None = None
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S


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
    if not 1 <= request.timeout_ms <= MAX_TIMEOUT_MS:
        raise UsageError(f"--timeout-ms {request.timeout_ms}: must be between 1 and 120000")
    if request.max_output_bytes < 1:
        raise UsageError(f"--max-output-bytes {request.max_output_bytes}: must be positive")
    required = ROLE_CALLS_PER_TRIAL * specs * request.repeat * 2
    max_calls = required if request.max_calls is None else request.max_calls
    if max_calls > MAX_CALLS_CAP:
        raise UsageError(
            f"--max-calls {max_calls}: at most {MAX_CALLS_CAP} role calls per run "
            f"({specs} specifications x {request.repeat} repetitions x 2 arms x 3 calls "
            f"= {required})"
        )
    if max_calls < required:
        raise UsageError(
            f"--max-calls {max_calls} does not cover 3 role calls x {specs} specifications x "
            f"{request.repeat} repetitions x 2 arms = {required}; the run was not started"
        )
    fixture = is_fixture_agent(request.agent)
    if fixture and request.evidence_kind == "live":
        raise UsageError(
            "--evidence-kind live: the fixture adapter always runs as protocol-fixture"
        )
    kind: EvidenceKind = "protocol-fixture" if fixture else (request.evidence_kind or "live")
    seed = request.seed if request.seed is not None else secrets.randbelow(2**31)
    settings = Settings(
        agent=list(request.agent),
        repeat=request.repeat,
        seed=seed,
        seed_given=request.seed is not None,
        max_calls=max_calls,
        required_calls=required,
        max_output_bytes=request.max_output_bytes,
        timeout_ms=request.timeout_ms,
        stability_runs=request.stability_runs,
        test_timeout_s=request.test_timeout_s,
    )
    return settings, kind


def manifest_digest(manifest: LearningManifest) -> str:
    """SHA-256 of the manifest's canonical JSON (so a dataset and its export hash alike)."""
    return sha256_bytes(canonical_bytes(manifest.model_dump(mode="json", by_alias=True)))


@dataclass(slots=True)
class _Phases:
    started: float = field(default_factory=time.perf_counter)
    setup_ms: int | None = None
    shared_preparation_ms: int | None = None
    ground_truth_ms: int | None = None
    trials_ms: int | None = None
    outcome: str = "started"

    def as_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": 1,
            "outcome": self.outcome,
            "elapsedMs": int((time.perf_counter() - self.started) * 1000),
            "setupMs": self.setup_ms,
            "sharedPreparationMs": self.shared_preparation_ms,
            "groundTruthMs": self.ground_truth_ms,
            "trialsMs": self.trials_ms,
        }


@contextmanager
def _timed() -> Iterator[Callable[[], int]]:
    start = time.perf_counter()
    yield lambda: int((time.perf_counter() - start) * 1000)


def _fixture_files(fixture: Fixture, defect_id: str | None = None) -> list[FileEntry]:
    if defect_id is None:
        return list(fixture.files)
    defect = next(d for d in fixture.defects if d.id == defect_id)
    replaced = {entry.path: entry for entry in defect.files}
    return [replaced.get(entry.path, entry) for entry in fixture.files]


def _forbidden_texts(manifest: LearningManifest) -> list[str]:
    """Content that must never reach a worker, a trial root or memory.

    Every reference test, wherever it appears. Defect files too, except a defect text that
    stands inside a specification's own source files: the worker is shown that source, so
    finding the text there reveals nothing, and counting it would stop a sound run (a defect
    made by cutting the end off its source).
    """
    texts = [test.content for fixture in manifest.fixtures for test in fixture.reference_tests]
    sources = [entry.content for fixture in manifest.fixtures for entry in fixture.files]
    texts += [
        entry.content
        for fixture in manifest.fixtures
        for defect in fixture.defects
        for entry in defect.files
        if not any(entry.content in source for source in sources)
    ]
    return [text for text in dict.fromkeys(texts) if text.strip()]


def _contains_any(haystack: str, needles: Sequence[str]) -> bool:
    return any(needle in haystack for needle in needles)


def _json_strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included (decoded, so newlines are real newlines)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _json_strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _json_strings(item)


def _stopped(
    common: dict[str, Any],
    started: float,
    status: Any,
    reason: str,
    *,
    identity_checks: list[str] | None = None,
    leak_scan: LeakScan | None = None,
    generation: Generation | None = None,
) -> TrialRecord:
    """A trial that ended before scoring: counted zero, incomplete, kept in the record."""
    return TrialRecord(
        **common,
        status=status,
        complete=False,
        reason=reason,
        identity_checks=identity_checks or [],
        lessons_reached_author=generation.lessons_reached_author if generation else [],
        generation=generation,
        validation=None,
        generated_baseline_cases=[],
        passing_cases=0,
        defects=[],
        detected=0,
        recall=0.0,
        leak_scan=leak_scan,
        generation_ms=generation.generation_ms if generation else None,
        validation_ms=None,
        total_ms=int((time.perf_counter() - started) * 1000),
    )


SCAN_FILE_CAP: Final = 8 * 1024 * 1024


def _tree_text(root: Path) -> str:
    """The text of every regular file under ``root``, for leak scans.

    Whatever a worker left there is read safely: symlinks are not followed, FIFOs and other
    special files are not opened, and each file is read through one descriptor up to a cap
    (a larger file is scanned in its first ``SCAN_FILE_CAP`` bytes).
    """
    parts = []
    for directory, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(directory, d))]
        for name in files:
            path = os.path.join(directory, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue  # a symlink (dangling or not) or an entry that vanished
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    parts.append(os.read(fd, SCAN_FILE_CAP).decode("utf-8", "replace"))
            finally:
                os.close(fd)
    return "\n".join(parts)


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


class _Controller:
    def __init__(
        self,
        request: LearningRequest,
        settings: Settings,
        evidence_kind: EvidenceKind,
        receipts: ReceiptDir,
        progress: Progress,
    ) -> None:
        self.request = request
        self.manifest = request.manifest
        self.settings = settings
        self.evidence_kind = evidence_kind
        self.receipts = receipts
        self.progress = progress
        # Installed pytest plugins must not change an evaluation's outcomes.
        self.runner = get_runner(self.manifest.runner, plugin_autoload=False)
        self.phases = _Phases()
        self.calls_used = 0
        self.forbidden = _forbidden_texts(self.manifest)
        self.fixtures = {fixture.id: fixture for fixture in self.manifest.fixtures}
        # Worker projects live under ``scratch``; the frozen store lives apart, in ``private``,
        # so a no-memory worker finds no store next to its directory.
        self.scratch = Path(tempfile.mkdtemp(prefix="lorelab-learning-"))
        self.private = Path(tempfile.mkdtemp(prefix="lorelab-learning-store-"))
        self.identity: WorkerIdentity | None = None
        self.frozen_store: Path | None = None
        self.frozen_sha256: str | None = None
        self.frozen_lessons = 0

    # ------------------------------------------------------------------ phases

    def write_manifest(self, plan: list[ScheduledTrial], preflight_error: str | None) -> None:
        self.receipts.write_json(
            "manifest.json",
            {
                "schemaVersion": 1,
                "lorelabVersion": lorelab.__version__,
                "manifestId": self.manifest.id,
                "manifestSha256": manifest_digest(self.manifest),
                "dataset": self.request.dataset,
                "runner": self.manifest.runner,
                "settings": self.settings.model_dump(mode="json", by_alias=True),
                "orderSeed": self.settings.seed,
                "evidenceKind": self.evidence_kind,
                "workerIdentity": (
                    self.identity.model_dump(mode="json", by_alias=True)
                    if self.identity is not None
                    else None
                ),
                "workerIdentityError": preflight_error,
                "verificationScope": dict(VERIFICATION_SCOPE),
                "implementationHashes": implementation_hashes(),
                "byteAccounting": BYTE_ACCOUNTING,
                "accountingVersion": ACCOUNTING_VERSION,
                "schedule": [entry.model_dump(mode="json", by_alias=True) for entry in plan],
            },
        )

    def preflight(self, plan: list[ScheduledTrial]) -> str | None:
        """Bind the worker identity in a cwd shaped like the first trial's; None when ok."""
        first = self.fixtures[plan[0].specification]
        with RunRoot(self.scratch) as root:
            cwd = root.create_project("preflight", first.files)
            try:
                self.identity = bind_identity(
                    list(self.request.agent),
                    cwd=cwd,
                    operator_identity=self.request.operator_identity,
                )
            except LorelabError as exc:
                return str(exc)
        if self.manifest.runner == "node" and shutil.which("node") is None:
            return "the manifest's runner is node, but node is not on PATH"
        return None

    def shared_preparation(self) -> None:
        results = []
        home = self.private / "frozen-home"
        store = open_store(home)
        try:
            with RunRoot(self.scratch) as root:
                for entry in self.manifest.history:
                    example = HistoricalExample(
                        id=entry.id,
                        specification_id=entry.specification_id,
                        requirements=entry.requirements,
                        runner=self.manifest.runner,
                        files=entry.files,
                        tests=entry.tests,
                    )
                    validation = validate_example(
                        example,
                        root,
                        runs=self.settings.stability_runs,
                        timeout_s=self.settings.test_timeout_s,
                        plugin_autoload=False,
                    )
                    results.append({"id": entry.id, **validation.model_dump(by_alias=True)})
                    self.progress(
                        f"history {entry.id}: {'valid' if validation.valid else 'refused'}"
                    )
                    if validation.valid:
                        store.add_lesson(
                            AddLessonRequest(
                                lesson_id=entry.id,
                                specification_id=entry.specification_id,
                                requirements=entry.requirements,
                                files=list(entry.files),
                                tests=list(entry.tests),
                                validation={
                                    "runner": self.manifest.runner,
                                    "runs": self.settings.stability_runs,
                                    "reason": validation.reason,
                                },
                            )
                        )
            self.frozen_lessons = len(store.list_lessons(LessonsRequest()).lessons)
            snapshot = self.private / "frozen.db"
            self.frozen_sha256 = store.snapshot(SnapshotRequest(path=str(snapshot))).sha256
        finally:
            store.close()
        shutil.rmtree(home)
        self.frozen_store = snapshot
        self.receipts.write_json("history-validation.json", {"schemaVersion": 1, "items": results})
        self.receipts.write_bytes("memory-frozen.sqlite", snapshot.read_bytes())
        self.receipts.write_json(
            "shared-preparation.json",
            {
                "schemaVersion": 1,
                "frozenStoreSha256": self.frozen_sha256,
                "frozenStoreReceipt": "memory-frozen.sqlite",
                "lessons": [item["id"] for item in results if item["valid"]],
                "refusedHistory": [item["id"] for item in results if not item["valid"]],
            },
        )

    def ground_truth(self) -> list[str]:
        """Check every fixture's labels; return the ids of fixtures whose labels failed."""
        directory = self.receipts.subdir("ground-truth")
        failed: list[str] = []
        with RunRoot(self.scratch) as root:
            variants: list[tuple[Fixture, str | None, Path]] = []
            for fixture in self.manifest.fixtures:
                for defect_id in [None, *(d.id for d in fixture.defects)]:
                    name = f"{fixture.id}.{defect_id or 'reference'}"
                    files = _fixture_files(fixture, defect_id) + list(fixture.reference_tests)
                    variants.append((fixture, defect_id, root.create_project(name, files)))

            def run_variant(item: tuple[Fixture, str | None, Path]) -> list[Execution]:
                fixture, defect_id, project = item
                runs = []
                for number in range(1, self.settings.stability_runs + 1):
                    execution = self.runner.run(project, timeout_s=self.settings.test_timeout_s)
                    name = f"{fixture.id}.{defect_id or 'reference'}.run{number}.json"
                    directory.write_json(name, execution)
                    runs.append(execution)
                return runs

            # The scope is entered inside the pool's block so that, on an interrupt, it kills
            # the running test processes before the pool waits for its threads.
            with ThreadPoolExecutor(max_workers=POOL_WORKERS) as pool, ProcessScope() as scope:
                executions = list(pool.map(scope.bind(run_variant), variants))
        by_fixture: dict[str, list[tuple[str | None, list[Execution]]]] = {}
        for (fixture, defect_id, _), runs in zip(variants, executions, strict=True):
            by_fixture.setdefault(fixture.id, []).append((defect_id, runs))
        for fixture in self.manifest.fixtures:
            reason = label_problem(fixture, by_fixture[fixture.id])
            self.progress(f"ground truth {fixture.id}: {reason or 'holds'}")
            if reason is not None:
                failed.append(fixture.id)
                self.receipts.write_json(
                    f"labels-{fixture.id}.json",
                    {
                        "schemaVersion": 1,
                        "fixture": fixture.id,
                        "reason": reason,
                        "executions": {
                            (defect_id or "reference"): [
                                run.model_dump(mode="json", by_alias=True) for run in runs
                            ]
                            for defect_id, runs in by_fixture[fixture.id]
                        },
                    },
                )
        return failed

    # ------------------------------------------------------------------ trials

    def run_trial(self, entry: ScheduledTrial) -> TrialRecord:
        started = time.perf_counter()
        fixture = self.fixtures[entry.specification]
        common: dict[str, Any] = {
            "position": entry.position,
            "specification": entry.specification,
            "repetition": entry.repetition,
            "arm": entry.arm,
            "defects_total": len(fixture.defects),
            "memory_store_sha256": None,
            "lessons_recalled": [],
            "lessons_below_floor": [],
            "setup_ms": None,
            "retrieval_ms": None,
        }
        if self.calls_used + ROLE_CALLS_PER_TRIAL > self.settings.max_calls:
            return _stopped(
                common,
                started,
                "not-run",
                f"the call budget of {self.settings.max_calls} is exhausted",
            )
        with RunRoot(self.scratch) as root:
            worker_cwd = root.create_project("worker", fixture.files)
            common["setup_ms"] = int((time.perf_counter() - started) * 1000)
            return self._trial_body(entry, fixture, root, worker_cwd, common, started)

    def _recall(self, arm: Arm, fixture: Fixture) -> tuple[Recall | None, str | None, int | None]:
        if arm == "no-memory":
            return None, None, None
        if self.frozen_store is None or self.frozen_sha256 is None:
            raise IntegrityFailure("the frozen memory store was not prepared")
        with _timed() as elapsed:
            home = Path(tempfile.mkdtemp(prefix="store-", dir=self.private))
            copy = home / "memory.db"
            shutil.copyfile(self.frozen_store, copy)
            digest = sha256_file(copy, cap=LAUNCHER_HASH_CAP)
            if digest != self.frozen_sha256:
                raise IntegrityFailure(
                    f"the frozen memory store copy hashes to {digest}, not {self.frozen_sha256}"
                )
            store = open_store(home)
            try:
                recall = recall_lessons(store, fixture.requirements, runner=self.manifest.runner)
            finally:
                store.close()
            shutil.rmtree(home)
            return recall, digest, elapsed()

    def _leaks(self, value: Any) -> bool:
        return any(_contains_any(text, self.forbidden) for text in _json_strings(value))

    def _trial_body(
        self,
        entry: ScheduledTrial,
        fixture: Fixture,
        root: RunRoot,
        worker_cwd: Path,
        common: dict[str, Any],
        started: float,
    ) -> TrialRecord:
        if self.identity is None:
            raise IntegrityFailure("the worker identity was not bound before the trials")
        recall, store_sha, retrieval_ms = self._recall(entry.arm, fixture)
        lessons = recall.lessons if recall is not None else None
        common.update(
            memory_store_sha256=store_sha,
            lessons_recalled=[lesson.id for lesson in lessons or []],
            lessons_below_floor=recall.below_floor if recall is not None else [],
            retrieval_ms=retrieval_ms,
        )
        before = LeakScan(
            payloads_clean=True,
            trial_root_clean=not _contains_any(_tree_text(worker_cwd), self.forbidden),
            memory_clean=not self._leaks([lesson.model_dump() for lesson in lessons or []]),
        )
        if not (before.trial_root_clean and before.memory_clean):
            where = "the worker's directory" if not before.trial_root_clean else "a lesson"
            return _stopped(
                common,
                started,
                "invalid",
                f"integrity: {where} holds reference-test or defect content; no call was made",
                leak_scan=before,
            )
        check = check_identity(self.identity, cwd=worker_cwd)
        if not check.ok:
            return _stopped(
                common,
                started,
                "invalid",
                "the worker identity changed before the trial; no call was made",
                identity_checks=list(check.changes),
            )
        generation = generate_tests(
            GenerationTask(
                requirements=fixture.requirements,
                runner=self.manifest.runner,
                source=tuple(fixture.files),
                specification_id=fixture.id,
            ),
            lessons,
            CallSettings(
                agent=tuple(self.request.agent),
                cwd=worker_cwd,
                identity=self.identity,
                timeout_ms=self.settings.timeout_ms,
                max_output_bytes=self.settings.max_output_bytes,
            ),
            guard=lambda role, payload: (
                "it holds reference-test or defect content" if self._leaks(payload) else None
            ),
        )
        self.calls_used += len(generation.roles)
        leak = LeakScan(
            payloads_clean=generation.status != "refused",
            trial_root_clean=not _contains_any(_tree_text(worker_cwd), self.forbidden),
            memory_clean=True,
        )
        if not (leak.payloads_clean and leak.trial_root_clean):
            return _stopped(
                common,
                started,
                "invalid",
                f"integrity: {generation.reason or 'the worker directory holds test content'}",
                leak_scan=leak,
                generation=generation,
            )
        identity_changes = [c for receipt in generation.roles for c in receipt.identity_changes]
        # Complete: every call answered (a reviewer's rejection is an answer). A failed call,
        # whatever its class, may be an outage rather than the worker's skill, so it keeps
        # the label from claiming anything.
        complete = all(receipt.failure is None for receipt in generation.roles)
        validation = None
        baseline = None
        defects: list[DefectResult] = []
        if generation.files:
            validation, _ = validate_candidates(
                root,
                "candidate",
                fixture.files,
                generation.files,
                runner=self.manifest.runner,
                runs=self.settings.stability_runs,
                timeout_s=self.settings.test_timeout_s,
                plugin_autoload=False,
            )
            baseline = validation.stability
            if (
                baseline is not None
                and baseline.stable
                and any(case.status == "passed" for case in baseline.runs[0].cases)
            ):
                defects = self._run_defects(root, fixture, generation.files, baseline)
        status, reason = self._status(generation.status, generation.reason, validation)
        if identity_changes:
            status, reason = "invalid", "the worker identity changed during a call"
        qualified = status == "qualified"
        detected = (
            sum(1 for d in defects if d.outcome is not None and d.outcome.status == "detected")
            if qualified
            else 0
        )
        passing = [
            case.id for case in (validation.cases if validation else []) if case.status == "passed"
        ]
        return TrialRecord(
            **common,
            status=status,
            complete=complete,
            reason=reason,
            identity_checks=identity_changes,
            lessons_reached_author=generation.lessons_reached_author,
            generation=generation,
            validation=validation,
            generated_baseline_cases=(
                [case.id for case in baseline.runs[0].cases] if baseline and baseline.runs else []
            ),
            passing_cases=len(passing) if qualified else 0,
            defects=defects,
            detected=detected,
            recall=detected / len(fixture.defects) if fixture.defects else 0.0,
            leak_scan=leak,
            generation_ms=generation.generation_ms,
            validation_ms=validation.validation_ms if validation else None,
            total_ms=int((time.perf_counter() - started) * 1000),
        )

    @staticmethod
    def _status(
        generation_status: str, generation_reason: str | None, validation: Any
    ) -> tuple[Any, str | None]:
        if generation_status == "failed":
            return "failed", generation_reason
        if generation_status == "rejected":
            return "rejected", generation_reason
        if validation is None:
            return "failed", "the author returned no test files"
        if not validation.valid:
            if validation.stability is not None and not validation.stability.stable:
                return "unstable", validation.reason
            return "invalid", validation.reason
        return "qualified", None

    def _run_defects(
        self, root: RunRoot, fixture: Fixture, tests: list[FileEntry], baseline: Any
    ) -> list[DefectResult]:
        projects = [
            root.create_project(f"defect-{d.id}", _fixture_files(fixture, d.id) + tests)
            for d in fixture.defects
        ]
        results = run_parallel(
            [
                StabilityJob(
                    self.runner,
                    project,
                    runs=self.settings.stability_runs,
                    timeout_s=self.settings.test_timeout_s,
                )
                for project in projects
            ],
            max_workers=POOL_WORKERS,
        )
        out = []
        valid = is_valid_baseline(baseline)
        for defect, stability in zip(fixture.defects, results, strict=True):
            failing = [
                case.id for case in stability.runs[0].cases if case.status in ("failed", "error")
            ]
            out.append(
                DefectResult(
                    defect=defect.id,
                    outcome=detect(baseline, stability) if valid else None,
                    raw_failing_cases=failing,
                    stability=stability,
                )
            )
        return out


def run_learning(
    request: LearningRequest, output: str | os.PathLike[str], progress: Progress | None = None
) -> LearningOutcome:
    """Run the whole protocol into the fresh directory ``output``; return how it ended."""
    say = progress or (lambda _message: None)
    settings, evidence_kind = resolve_settings(request)
    plan = schedule([f.id for f in request.manifest.fixtures], settings.repeat, settings.seed)
    receipts = create_output_dir(output)
    controller = _Controller(request, settings, evidence_kind, receipts, say)
    phases = controller.phases
    try:
        return _run(controller, plan, say)
    except BaseException as exc:
        phases.outcome = "interrupted" if isinstance(exc, KeyboardInterrupt) else "crashed"
        raise
    finally:
        receipts.write_json("controller.json", phases.as_json())
        shutil.rmtree(controller.scratch, ignore_errors=True)
        shutil.rmtree(controller.private, ignore_errors=True)


def _run(controller: _Controller, plan: list[ScheduledTrial], say: Progress) -> LearningOutcome:
    phases = controller.phases
    receipts = controller.receipts
    with _timed() as elapsed:
        error = controller.preflight(plan)
        controller.write_manifest(plan, error)
        phases.setup_ms = elapsed()
    if error is not None:
        receipts.write_json("preflight.json", {"schemaVersion": 1, "ok": False, "error": error})
        phases.outcome = "preflight-failed"
        return LearningOutcome(3, f"preflight failed: {error}", None)
    receipts.write_json("preflight.json", {"schemaVersion": 1, "ok": True, "error": None})

    with _timed() as elapsed:
        controller.shared_preparation()
        phases.shared_preparation_ms = elapsed()
    with _timed() as elapsed:
        failed = controller.ground_truth()
        phases.ground_truth_ms = elapsed()
    if failed:
        phases.outcome = "ground-truth-failed"
        names = ", ".join(failed)
        return LearningOutcome(
            1, f"ground truth failed for {names}; see labels-*.json; no worker was called", None
        )

    trials_dir = receipts.subdir("trials")
    records: list[TrialRecord] = []
    with _timed() as elapsed:
        for entry in plan:
            record = controller.run_trial(entry)
            name = (
                f"{entry.position:03d}-{entry.specification}-r{entry.repetition}-{entry.arm}.json"
            )
            trials_dir.write_json(name, record)
            records.append(record)
            say(
                f"trial {entry.position}/{len(plan)} {entry.specification} r{entry.repetition} "
                f"{entry.arm}: {record.status}, {record.detected}/{record.defects_total} detected"
            )
            scan = record.leak_scan
            if scan is not None and not (
                scan.payloads_clean and scan.trial_root_clean and scan.memory_clean
            ):
                phases.trials_ms = elapsed()
                phases.outcome = "integrity-failed"
                return LearningOutcome(
                    3, f"trial {entry.position}: {record.reason}; the run was stopped", None
                )
        phases.trials_ms = elapsed()
    summary = build_summary(
        controller.manifest,
        manifest_digest(controller.manifest),
        controller.evidence_kind,
        controller.settings,
        records,
        frozen_lessons=controller.frozen_lessons,
    )
    receipts.write_json("summary.json", summary)
    receipts.write_text("summary.md", summary_markdown(summary))
    unqualified = [r.position for r in records if r.status != "qualified"]
    phases.outcome = "complete"
    if unqualified:
        return LearningOutcome(
            1,
            f"{len(unqualified)} of {len(records)} trials did not qualify (positions "
            f"{unqualified}); label: {summary.paired.label}",
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
        return load_manifest(path), f"manifest:{path}"
    name = dataset or "default"
    return get_dataset(name), name
