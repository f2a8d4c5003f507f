"""One trial: a specification x arm x repetition in its own disposable project. Recall (memory
arm), leak and identity checks, the three role calls, validation of the generated tests and
their run against every planted defect, scored into one :class:`TrialRecord`.

Nothing reference tests or defect payloads hold may reach a worker, a trial's directory or a
recalled lesson; a trial that ends early is kept in the record and counts zero.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lorelab.errors import IntegrityFailure
from lorelab.evaluation.learning._placebo import placebo_recall
from lorelab.evaluation.learning._preparation import fixture_files
from lorelab.evaluation.learning._state import POOL_WORKERS, ROLE_CALLS_PER_TRIAL, LearningRun
from lorelab.evaluation.learning.manifest import Fixture, LearningManifest
from lorelab.evaluation.learning.records import (
    BYTE_ACCOUNTING,
    DefectResult,
    LeakScan,
    RoleExchange,
    RoleWorkerBinding,
    ScheduledTrial,
    TrialRecord,
    TrialStatus,
)
from lorelab.evaluation.learning.roles import PerRole, check_roles, identity_digest, model_changes
from lorelab.io import LAUNCHER_HASH_CAP, json_bytes, sha256_file
from lorelab.memory import open_store
from lorelab.runners import Stability, StabilityJob, detect, is_valid_baseline, run_parallel
from lorelab.testgen import (
    CallSettings,
    CandidateValidation,
    Generation,
    GenerationTask,
    Recall,
    recall_lessons,
    validate_candidates,
)
from lorelab.testgen import generate as generate_tests
from lorelab.workers import PROMPT_VERSION, RoleReceipt, WorkerIdentity, prompt_hash
from lorelab.workers.roles import LessonSeed
from lorelab.workspace import FileEntry, RunRoot

SCAN_FILE_CAP: Final = 8 * 1024 * 1024
INCOMPLETE: Final = ("collection-error", "no-tests", "tampered")


def forbidden_texts(manifest: LearningManifest) -> list[str]:
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


@dataclass(slots=True)
class _Trial:
    """What every record of one trial shares, filled in as the trial goes."""

    entry: ScheduledTrial
    fixture: Fixture
    role_workers: PerRole[RoleWorkerBinding]
    started: float = field(default_factory=time.perf_counter)
    setup_ms: int | None = None
    retrieval_ms: int | None = None
    memory_store_sha256: str | None = None
    lessons_recalled: list[str] = field(default_factory=list)
    lessons_below_floor: list[str] = field(default_factory=list)
    placebo_for: list[str] | None = None
    exchanges: list[RoleExchange] = field(default_factory=list)

    def record(
        self,
        *,
        status: TrialStatus,
        complete: bool,
        reason: str | None,
        identity_checks: list[str],
        generation: Generation | None,
        validation: CandidateValidation | None = None,
        generated_baseline_cases: list[str] | None = None,
        passing_cases: int = 0,
        defects: list[DefectResult] | None = None,
        detected: int = 0,
        leak_scan: LeakScan | None = None,
    ) -> TrialRecord:
        """The trial's record; everything not passed is the zero of an unscored trial."""
        total = len(self.fixture.defects)
        return TrialRecord(
            position=self.entry.position,
            specification=self.entry.specification,
            repetition=self.entry.repetition,
            arm=self.entry.arm,
            status=status,
            complete=complete,
            reason=reason,
            identity_checks=identity_checks,
            role_workers=self.role_workers,
            memory_store_sha256=self.memory_store_sha256,
            lessons_recalled=self.lessons_recalled,
            lessons_below_floor=self.lessons_below_floor,
            lessons_reached_author=generation.lessons_reached_author if generation else [],
            placebo_for=self.placebo_for,
            lesson_seed=self.lesson_seed(),
            generation=generation,
            validation=validation,
            generated_baseline_cases=generated_baseline_cases or [],
            passing_cases=passing_cases,
            defects=defects or [],
            defects_total=total,
            detected=detected,
            recall=detected / total if total else 0.0,
            leak_scan=leak_scan,
            setup_ms=self.setup_ms,
            retrieval_ms=self.retrieval_ms,
            generation_ms=generation.generation_ms if generation else None,
            validation_ms=validation.validation_ms if validation else None,
            total_ms=int((time.perf_counter() - self.started) * 1000),
            byte_accounting=dict(BYTE_ACCOUNTING),
            exchanges=self.exchanges,
        )

    def lesson_seed(self) -> LessonSeed | None:
        """What the author reported doing with the lessons (null: it reported nothing)."""
        for exchange in self.exchanges:
            if exchange.role == "author" and exchange.response is not None:
                reported = exchange.response.get("lessonSeed")
                return LessonSeed.model_validate(reported) if reported is not None else None
        return None

    def stopped(
        self,
        status: TrialStatus,
        reason: str,
        *,
        identity_checks: list[str] | None = None,
        leak_scan: LeakScan | None = None,
        generation: Generation | None = None,
    ) -> TrialRecord:
        """A trial that ended before scoring: counted zero, incomplete, kept in the record."""
        return self.record(
            status=status,
            complete=False,
            reason=reason,
            identity_checks=identity_checks or [],
            generation=generation,
            leak_scan=leak_scan,
        )


def _identities(run: LearningRun) -> PerRole[WorkerIdentity]:
    if run.identities is None:
        raise IntegrityFailure("the worker identities were not bound before the trials")
    return run.identities


def role_workers(run: LearningRun) -> PerRole[RoleWorkerBinding]:
    """Each role's argv and the digest of the identity it is held to, for the trial's record.

    The digest is of the identity as ``manifest.json`` holds it (workspace paths normalized),
    so a reader can check it against ``roleIdentities`` alone.
    """
    identities = _identities(run)
    roles = run.request.roles

    def binding(argv: tuple[str, ...], identity: WorkerIdentity) -> RoleWorkerBinding:
        written = json.loads(run.log.as_written(identity))
        return RoleWorkerBinding(argv=list(argv), identity_sha256=identity_digest(written))

    return PerRole[RoleWorkerBinding](
        architect=binding(roles.architect, identities.architect),
        author=binding(roles.author, identities.author),
        reviewer=binding(roles.reviewer, identities.reviewer),
    )


def run_trial(run: LearningRun, entry: ScheduledTrial) -> TrialRecord:
    """Run one scheduled trial in its own disposable project and score it."""
    trial = _Trial(entry, run.fixture(entry.specification), role_workers(run))
    if run.calls_used + ROLE_CALLS_PER_TRIAL > run.settings.max_calls:
        return trial.stopped("not-run", f"the call budget of {run.settings.max_calls} is exhausted")
    with RunRoot(run.scratch) as root:
        worker_cwd = root.create_project("worker", trial.fixture.files)
        # Setup is the disposable project and, in the memory arm, the frozen store's copy.
        home = _store_copy(run, trial) if trial.entry.arm != "no-memory" else None
        trial.setup_ms = int((time.perf_counter() - trial.started) * 1000)
        try:
            return _trial_body(run, trial, root, worker_cwd, home)
        finally:
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)


def _store_copy(run: LearningRun, trial: _Trial) -> Path:
    """A private copy of the frozen store, its hash checked against the frozen one."""
    if run.frozen_store is None or run.frozen_sha256 is None:
        raise IntegrityFailure("the frozen memory store was not prepared")
    home = Path(tempfile.mkdtemp(prefix="store-", dir=run.private))
    copy = home / "memory.db"
    shutil.copyfile(run.frozen_store, copy)
    digest = sha256_file(copy, cap=LAUNCHER_HASH_CAP)
    if digest != run.frozen_sha256:
        raise IntegrityFailure(
            f"the frozen memory store copy hashes to {digest}, not {run.frozen_sha256}"
        )
    trial.memory_store_sha256 = digest
    return home


def _recall(run: LearningRun, home: Path | None, trial: _Trial) -> tuple[Recall | None, int | None]:
    """The recall alone (the placebo arm's choice, in that arm), and how long it took (None,
    None without memory)."""
    if home is None:
        return None, None
    start = time.perf_counter()
    store = open_store(home)
    try:
        if trial.entry.arm == "placebo":
            recall, trial.placebo_for = placebo_recall(store, trial.fixture, run.manifest.runner)
        else:
            recall = recall_lessons(store, trial.fixture.requirements, runner=run.manifest.runner)
    finally:
        store.close()
    return recall, int((time.perf_counter() - start) * 1000)


def _leaks(run: LearningRun, value: Any) -> bool:
    return any(_contains_any(text, run.forbidden) for text in _json_strings(value))


def _before_calls(
    run: LearningRun, trial: _Trial, worker_cwd: Path, home: Path | None
) -> TrialRecord | Recall | None:
    """Recall and the checks before any call: a stopped record, or the recall (None: off)."""
    identities = _identities(run)
    recall, retrieval_ms = _recall(run, home, trial)
    lessons = recall.lessons if recall is not None else []
    trial.lessons_recalled = [lesson.id for lesson in lessons]
    trial.lessons_below_floor = recall.below_floor if recall is not None else []
    trial.retrieval_ms = retrieval_ms
    before = LeakScan(
        payloads_clean=True,
        trial_root_clean=not _contains_any(_tree_text(worker_cwd), run.forbidden),
        memory_clean=not _leaks(run, [lesson.model_dump() for lesson in lessons]),
    )
    if not (before.trial_root_clean and before.memory_clean):
        where = "the worker's directory" if not before.trial_root_clean else "a lesson"
        return trial.stopped(
            "invalid",
            f"integrity: {where} holds reference-test or defect content; no call was made",
            leak_scan=before,
        )
    changes = check_roles(identities, cwd=worker_cwd)
    if changes:
        return trial.stopped(
            "invalid",
            f"identity-changed before the trial; no call was made: {changes[0]}",
            identity_checks=changes,
            generation=_not_launched(run, trial, worker_cwd, recall, changes),
        )
    return recall


def _not_launched(
    run: LearningRun, trial: _Trial, worker_cwd: Path, recall: Recall | None, changes: list[str]
) -> Generation:
    """The generation of a trial whose first call was refused before launch: an identity
    changed before the trial. Its one role receipt (``spawned: false``) counts as attempted.

    The payload that call would have carried is built by the generation itself and stopped
    before the transport, so the receipt counts its bytes without anything being launched.
    """
    stopped: list[tuple[str, dict[str, Any]]] = []

    def refuse(role: str, payload: dict[str, Any]) -> str:
        stopped.append((role, payload))
        return "a worker identity changed before the trial"

    refused = _generate(run, trial, worker_cwd, recall, guard=refuse, count=False)
    role, payload = stopped[0]
    # Validated as the transport's own not-launched receipt is built (same fields, same types).
    receipt = RoleReceipt.model_validate(
        {
            "role": role,
            "attempt": 1,
            "spawned": False,
            "exit_code": None,
            "signal": None,
            "duration_ms": 0,
            "timeout_ms": run.settings.timeout_ms,
            "max_output_bytes": run.settings.max_output_bytes,
            "input_bytes": json_bytes(payload),
            "output_bytes": None,
            "stdout_bytes": 0,
            "stderr_bytes": 0,
            "usage": None,
            "model": {"claimed": None},
            "evidence_kind": None,
            "failure": "identity-changed",
            "failure_detail": "a worker identity changed before the trial's first call; "
            "not launched",
            "identity_changes": changes,
            "raw_response": None,
            "raw_response_truncated": False,
            "stderr_tail": "",
            "prompt_version": PROMPT_VERSION,
            "prompt_hash": prompt_hash(role),
        }
    )
    run.calls_used += 1
    # A payload holding test content stays out of the private record too.
    kept = None if _leaks(run, payload) else payload
    trial.exchanges = [RoleExchange(role=role, payload=kept, response=None)]
    return refused.model_copy(
        update={
            "status": "failed",
            "reason": f"{role} call failed (identity-changed): {receipt.failure_detail}",
            "roles": [receipt],
        }
    )


def _generate(
    run: LearningRun,
    trial: _Trial,
    worker_cwd: Path,
    recall: Recall | None,
    *,
    guard: Callable[[str, dict[str, Any]], str | None] | None = None,
    count: bool = True,
) -> Generation:
    identities = _identities(run)
    roles = run.request.roles
    fixture = trial.fixture
    sent: list[dict[str, Any]] = []
    received: list[dict[str, Any] | None] = []
    generation = generate_tests(
        GenerationTask(
            requirements=fixture.requirements,
            runner=run.manifest.runner,
            source=tuple(fixture.files),
            specification_id=fixture.id,
        ),
        recall.lessons if recall is not None else None,
        CallSettings(
            agent=roles.author,
            cwd=worker_cwd,
            identity=identities.author,
            bounds=run.settings.bounds,
            architect_agent=roles.architect,
            architect_identity=identities.architect,
            reviewer_agent=roles.reviewer,
            reviewer_identity=identities.reviewer,
        ),
        guard=guard
        or (
            lambda _role, payload: (
                "it holds reference-test or defect content" if _leaks(run, payload) else None
            )
        ),
        sent=sent,
        received=received,
    )
    if count:
        run.calls_used += len(generation.roles)
        trial.exchanges = [
            RoleExchange(role=receipt.role, payload=payload, response=response)
            for receipt, payload, response in zip(generation.roles, sent, received, strict=True)
        ]
    return generation


def _trial_body(
    run: LearningRun, trial: _Trial, root: RunRoot, worker_cwd: Path, home: Path | None
) -> TrialRecord:
    checked = _before_calls(run, trial, worker_cwd, home)
    if isinstance(checked, TrialRecord):
        return checked
    generation = _generate(run, trial, worker_cwd, checked)
    leak = LeakScan(
        payloads_clean=generation.status != "refused",
        trial_root_clean=not _contains_any(_tree_text(worker_cwd), run.forbidden),
        memory_clean=True,
    )
    if not (leak.payloads_clean and leak.trial_root_clean):
        return trial.stopped(
            "invalid",
            f"integrity: {generation.reason or 'the worker directory holds test content'}",
            leak_scan=leak,
            generation=generation,
        )
    identity_changes = [
        f"{receipt.role}: {change}"
        for receipt in generation.roles
        for change in receipt.identity_changes
    ]
    # A server that names another model mid-trial changed what answered: identity-changed.
    switched = model_changes(run.request.roles, generation.roles)
    identity_changes += switched
    # Complete: every call answered (a reviewer's rejection is an answer). A failed call,
    # whatever its class, may be an outage rather than the worker's skill, so it keeps
    # the label from claiming anything.
    complete = all(receipt.failure is None for receipt in generation.roles)
    validation, baseline, defects = _validate(run, trial.fixture, root, generation)
    status, reason = _status(generation.status, generation.reason, validation)
    if status == "qualified":
        status, reason = _defects_status(defects)
    if identity_changes:
        # The reason names the first change: what changed is the point, not that something did.
        status, reason = "invalid", f"identity-changed: {(switched or identity_changes)[0]}"
    qualified = status == "qualified"
    detected = sum(1 for d in defects if d.outcome is not None and d.outcome.status == "detected")
    passing = [c.id for c in (validation.cases if validation else []) if c.status == "passed"]
    return trial.record(
        status=status,
        complete=complete,
        reason=reason,
        identity_checks=identity_changes,
        generation=generation,
        validation=validation,
        generated_baseline_cases=(
            [case.id for case in baseline.runs[0].cases] if baseline and baseline.runs else []
        ),
        passing_cases=len(passing) if qualified else 0,
        defects=defects,
        detected=detected if qualified else 0,
        leak_scan=leak,
    )


def _validate(
    run: LearningRun, fixture: Fixture, root: RunRoot, generation: Generation
) -> tuple[CandidateValidation | None, Stability | None, list[DefectResult]]:
    """Validate the generated tests; with a stable, passing baseline, run every defect."""
    if not generation.files:
        return None, None, []
    validation, _ = validate_candidates(
        root,
        "candidate",
        fixture.files,
        generation.files,
        runner=run.manifest.runner,
        runs=run.settings.stability_runs,
        timeout_s=run.settings.test_timeout_s,
        plugin_autoload=False,
    )
    baseline = validation.stability
    defects: list[DefectResult] = []
    if (
        baseline is not None
        and baseline.stable
        and any(case.status == "passed" for case in baseline.runs[0].cases)
    ):
        defects = _run_defects(run, root, fixture, generation.files, baseline)
    return validation, baseline, defects


def _status(
    generation_status: str, generation_reason: str | None, validation: CandidateValidation | None
) -> tuple[TrialStatus, str | None]:
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


def _defects_status(defects: list[DefectResult]) -> tuple[TrialStatus, str | None]:
    """A trial stays qualified only if every defect run was complete and stable.

    Changing outcomes, incomplete collection or skipped cases on any defect invalidate the
    whole trial: its detections count zero, and the raw outcomes stay in its receipt.
    """
    for result in defects:
        stability = result.stability
        if not stability.stable:
            return "unstable", (
                f"defect {result.defect}: the generated tests' outcome changed between "
                f"stability runs ({stability.first_difference})"
            )
        run = stability.runs[0]
        if run.classification in INCOMPLETE:
            return "invalid", f"defect {result.defect}: {run.classification} ({run.reason})"
        skipped = sorted(case.id for case in run.cases if case.status == "skipped")
        if skipped:
            return "invalid", f"defect {result.defect}: skipped cases {skipped}"
    return "qualified", None


def _run_defects(
    run: LearningRun, root: RunRoot, fixture: Fixture, tests: list[FileEntry], baseline: Stability
) -> list[DefectResult]:
    projects = [
        root.create_project(f"defect-{d.id}", fixture_files(fixture, d.id) + tests)
        for d in fixture.defects
    ]
    results = run_parallel(
        [
            StabilityJob(
                run.runner,
                project,
                runs=run.settings.stability_runs,
                timeout_s=run.settings.test_timeout_s,
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
