"""The receipts the learning evaluation writes: settings, trials, summary, controller phases."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import AliasChoices, Field

from lorelab._model import EvidenceKind, ReceiptModel, RecordModel, RunnerName
from lorelab.evaluation.learning.manifest import LearningManifest
from lorelab.evaluation.learning.roles import PerRole, TestRole, WorkerKind, picklable
from lorelab.io import Confinement
from lorelab.runners import DefectOutcome, Execution, Stability
from lorelab.testgen import CandidateValidation, Generation
from lorelab.workers import WorkerBounds, WorkerIdentity
from lorelab.workers.roles import LessonSeed

Arm = Literal["memory", "no-memory", "placebo"]
Control = Literal["placebo"]
ControlArm = Literal["no-memory", "placebo"]
"""The arm memory is compared with."""
TrialStatus = Literal["qualified", "rejected", "failed", "invalid", "unstable", "not-run"]
ARMS: tuple[Arm, Arm] = ("memory", "no-memory")
PLACEBO: Final = "placebo"


def run_arms(control: Control | None) -> tuple[Arm, ...]:
    """The arms of a run: memory and no-memory, and the placebo arm with ``--control placebo``."""
    return (*ARMS, "placebo") if control == PLACEBO else ARMS


ACCOUNTING_VERSION = 2

BYTE_ACCOUNTING: dict[str, str] = {
    "inputBytes": (
        "UTF-8 length of the canonical JSON of the role payload before transportBudget is appended"
    ),
    "outputBytes": "UTF-8 length of the canonical JSON of the parsed response",
    "canonicalJson": "UTF-8, ',' and ':' separators without whitespace, keys in given order",
}


class RoleWorker(RecordModel):
    """The worker that plays one role, for the whole run (both arms)."""

    argv: list[str] = Field(description="The worker argv, after resolving a shipped name.")
    kind: WorkerKind = Field(
        description="protocol-fixture, rule-based (static), search-based (Pynguin), agent-cli "
        "(claude, codex, gemini), model-endpoint (openai) or external."
    )


class RoleWorkerBinding(RecordModel):
    """Which bound worker one role of a trial called."""

    argv: list[str]
    identity_sha256: str = Field(
        description="SHA-256 of the canonical JSON of the role's identity in manifest.json "
        "(roleIdentities)."
    )


picklable(PerRole[RoleWorker])
picklable(PerRole[RoleWorkerBinding])


class Settings(RecordModel):
    """The settings of one run, as given and as resolved."""

    agent: list[str] = Field(description="The worker argv (--agent), after resolving a name.")
    roles: PerRole[RoleWorker] | None = Field(
        default=None,
        description="The worker of each role; --agent unless --architect-agent, --author-agent "
        "or --reviewer-agent gave the role its own. Both arms use the same assignment. Null in "
        "receipts written before per-role workers existed.",
    )
    repeat: int = Field(description="Repetitions per specification and arm.")
    seed: int = Field(description="The order seed; it controls scheduling only.")
    seed_given: bool = Field(description="Whether --seed was given (else drawn and recorded).")
    max_calls: int = Field(description="The role-call budget for the whole run.")
    required_calls: int = Field(description="3 role calls x specifications x repeat x arms.")
    control: Control | None = Field(
        default=None,
        description="placebo: a third arm, whose lessons come from other specifications' "
        "history (--control placebo); null: memory and no-memory only.",
    )
    max_output_bytes: int
    timeout_ms: int
    stability_runs: int
    test_timeout_s: float = Field(description="Per-execution timeout of every test run.")
    confinement: Confinement | None = Field(
        default=None,
        description="The sandbox the reference suites and generated tests ran in, as probed "
        "before the run, and whether --allow-unsandboxed was given (null in older receipts).",
    )

    @property
    def bounds(self) -> WorkerBounds:
        """The bounds every role call of the run is made under."""
        return WorkerBounds(self.timeout_ms, self.max_output_bytes)


class ScheduledTrial(RecordModel):
    """One entry of the schedule."""

    position: int = Field(description="1-based position in the run order.")
    specification: str
    repetition: int
    arm: Arm


class DefectResult(RecordModel):
    """One defect run against the generated tests."""

    defect: str
    outcome: DefectOutcome | None = Field(
        description="Scored with the runners' detection rule; null when no valid baseline."
    )
    raw_failing_cases: list[str] = Field(
        description="Cases that failed or errored on the defect (raw, whether counted or not)."
    )
    stability: Stability


class LeakScan(RecordModel):
    """Proof that reference tests and defect payloads stayed out of the worker's reach."""

    payloads_clean: bool = Field(description="No payload contains reference or defect content.")
    trial_root_clean: bool = Field(description="No file in the worker's cwd holds such content.")
    memory_clean: bool = Field(description="No recalled lesson holds such content.")


class RoleExchange(RecordModel):
    """One role call of a trial as the worker saw it: the payload and the parsed response."""

    role: str
    payload: dict[str, Any] | None = Field(
        description="The role payload (before transportBudget is appended); null when it was "
        "not kept."
    )
    response: dict[str, Any] | None = Field(
        description="The parsed response; null when the call failed or was never launched."
    )


class TrialPayloads(ReceiptModel):
    """``private/<trial>.json``: each role's input payload and parsed response, in call order.

    Kept apart from the trial receipt, in the output directory's ``private/`` (0700, each file
    0600), with the same path normalization as every receipt."""

    position: int
    specification: str
    repetition: int
    arm: Arm
    calls: list[RoleExchange]


class TrialRecord(ReceiptModel):
    """One specification x arm x repetition, in its own disposable project."""

    position: int
    specification: str
    repetition: int
    arm: Arm
    status: TrialStatus = Field(
        description=(
            "qualified: approved and validated, detections count; rejected: the reviewer said "
            "no; failed: a role call failed; invalid: the candidates failed validation, the "
            "identity changed, or a defect run collected incompletely or skipped cases; "
            "unstable: the generated baseline, or the generated tests on a defect, changed "
            "outcome between stability runs; not-run: the call budget was exhausted. "
            "Everything but qualified counts zero."
        )
    )
    complete: bool = Field(
        description="The trial ran every step without an infrastructure failure (timeout, "
        "spawn failure, identity change, budget)."
    )
    reason: str | None
    identity_checks: list[str] = Field(
        description="Changes found by identity checks, each prefixed with its role; empty = ok."
    )
    role_workers: PerRole[RoleWorkerBinding] | None = Field(
        default=None,
        description="Per role: the worker argv and the SHA-256 of its identity in manifest.json "
        "(roleIdentities), checked before the trial and before and after each of its calls. "
        "Null in receipts written before per-role workers existed.",
    )
    memory_store_sha256: str | None = Field(description="Hash of the store copy used; null off.")
    lessons_recalled: list[str]
    lessons_below_floor: list[str]
    lessons_reached_author: list[str]
    placebo_for: list[str] | None = Field(
        default=None,
        description="Placebo arm: the lessons the memory arm recalls for this specification, "
        "each stood in for by the lesson at the same place of lessonsRecalled (same number, "
        "nearest size, from other specifications' history); null in the other arms.",
    )
    lesson_seed: LessonSeed | None = Field(
        default=None,
        description="What the author reported doing with the lessons (Pynguin: lesson "
        "statements kept in and dropped from its seed, with the reasons); null when the author "
        "reported nothing.",
    )
    generation: Generation | None
    validation: CandidateValidation | None
    generated_baseline_cases: list[str] = Field(description="Case ids of the generated baseline.")
    passing_cases: int = Field(description="Generated cases passing on the reference source.")
    defects: list[DefectResult]
    defects_total: int
    detected: int = Field(description="Counted detections (zero unless qualified).")
    recall: float = Field(description="detected / defectsTotal; 0 unless qualified.")
    leak_scan: LeakScan | None
    setup_ms: int | None = Field(description="Null when the trial never set up a project.")
    retrieval_ms: int | None = Field(description="Null in the no-memory arm.")
    generation_ms: int | None
    validation_ms: int | None
    total_ms: int
    worker: dict[str, Any] | None = Field(
        default=None,
        description="Where a trial run side by side ran (node, process, Ray node id); null "
        "for a sequential run.",
    )
    byte_accounting: dict[str, str] | None = Field(
        default=None,
        description="The definitions of inputBytes and outputBytes in this trial's role "
        "receipts. Null in receipts written before trials declared them.",
    )
    exchanges: list[RoleExchange] | None = Field(
        default=None,
        exclude=True,
        description="Each role's payload and parsed response; never written in the trial "
        "receipt (the controller writes them to private/, see TrialPayloads).",
    )


class ArmSummary(RecordModel):
    """Totals for one arm."""

    trials: int
    qualified_trials: int
    defects: int
    detected: int
    defect_recall: float | None
    passing_cases: int
    generation_ms: int
    input_bytes: int
    output_bytes: int
    calls: int = Field(description="Role calls scheduled (3 per trial).")
    attempted_calls: int = Field(
        description="Role calls with a role receipt: handed to the transport, or refused "
        "unlaunched because a worker identity changed before the trial's first call."
    )
    spawned_calls: int = Field(description="Role calls that started a process.")
    billing_usd: float | None = Field(
        serialization_alias="billingUSD",
        # Read back under the name it is written as (receipts must round-trip).
        validation_alias=AliasChoices("billingUSD", "billing_usd"),
        description="Sum of reported cost; null unless every call reported.",
    )
    setup_ms: int | None = Field(
        default=None,
        description="Sum over the arm's trials of setupMs (null: no trial set up a project).",
    )
    setup_ms_median: float | None = Field(
        default=None, description="Median setupMs over the trials that set up a project."
    )
    retrieval_ms: int | None = Field(
        default=None,
        description="Sum of retrievalMs (the recall alone); null in the no-memory arm.",
    )
    retrieval_ms_median: float | None = Field(
        default=None, description="Median retrievalMs over the trials that recalled."
    )
    total_ms: int | None = Field(
        default=None, description="Sum of every trial's totalMs (a lost trial counts 0)."
    )
    total_ms_median: float | None = Field(
        default=None, description="Median totalMs over the arm's trials."
    )
    stable_trials: int | None = Field(
        default=None,
        description="Trials whose generated tests were run for stability and held: a stable "
        "baseline and a stable run on every defect. Null in older summaries.",
    )
    unstable_trials: int | None = Field(
        default=None, description="Trials with status unstable. Null in older summaries."
    )
    trials_with_lesson_used: int | None = Field(
        default=None,
        description="Trials whose author reported keeping at least one lesson statement "
        "(lessonSeed.kept > 0). Null in older summaries.",
    )
    trials_reporting_lesson_use: int | None = Field(
        default=None,
        description="Trials whose author reported lessonSeed at all; the others are unknown, "
        "not counted as unused. Null in older summaries.",
    )


class SpecPair(RecordModel):
    """Per specification: mean recall per arm and the difference, memory minus the control."""

    specification: str
    memory_recall: float
    no_memory_recall: float
    difference: float
    placebo_recall: float | None = Field(
        default=None, description="The placebo arm's mean recall; null without that arm."
    )


Label = Literal["positive", "negative", "inconclusive", "not-evidence"]


class EffectSize(RecordModel):
    """How large the difference is, next to the test that says whether it is there."""

    mean_difference: float | None = Field(
        description="Mean over specifications of the per-specification recall difference, "
        "memory minus no-memory; null without specifications."
    )
    ci95_low: float | None = Field(description="Lower end of the 95% interval.")
    ci95_high: float | None = Field(description="Upper end of the 95% interval.")
    method: str = Field(
        description="How the interval is computed: a percentile bootstrap that resamples whole "
        "specifications (their repetitions stay together), with a fixed seed."
    )
    clustered_by: Literal["specification"] = "specification"
    resamples: int
    seed: int
    changes_label: Literal[False] = Field(
        default=False, description="The label rule never reads the effect size."
    )


class Paired(RecordModel):
    """The paired comparison over specifications, and the label it supports."""

    specs: list[SpecPair] = Field(
        description="Per specification: mean recall per arm over its repetitions (rejected and "
        "failed trials count zero) and the difference, memory minus no-memory."
    )
    sign_test: dict[str, int | float] = Field(
        description="Exact two-sided sign test over the differences; ties excluded."
    )
    alpha: float
    ties_excluded: bool = True
    label: Label = Field(
        description="positive/negative only with >= 6 specifications, >= 3 repetitions, every "
        "trial complete and p < alpha; not-evidence for protocol-fixture runs; else inconclusive."
    )
    label_reason: str
    effect: EffectSize = Field(
        description="Mean per-specification recall difference with its 95% interval."
    )
    control: ControlArm = Field(
        default="no-memory",
        description="The arm memory is compared with: differences are memory minus it.",
    )


class ControllerRecord(RecordModel):
    """What ran the evaluation, with which settings, and how long it had taken by the summary."""

    program: str = Field(description="The command: lorelab eval learning.")
    module: str = Field(description="The controller's module.")
    lorelab_version: str = Field(description="As manifest.json's lorelabVersion.")
    python_version: str
    dataset: str = Field(description="As manifest.json's dataset.")
    settings: Settings = Field(description="As manifest.json's settings (argv of every role).")
    elapsed_ms: int = Field(
        description="From the command's entry (before the manifest was read) to the summary."
    )
    setup_ms: int | None = Field(description="Preflight and manifest.json, as controller.json.")
    shared_preparation_ms: int | None
    ground_truth_ms: int | None
    trials_ms: int | None


class Summary(ReceiptModel):
    """The run's summary: arms, the paired comparison and its label."""

    evidence_kind: EvidenceKind
    roles: PerRole[RoleWorker] | None = Field(
        default=None,
        description="The worker of each role, as in settings (null before per-role workers).",
    )
    fixture_roles: list[TestRole] | None = Field(
        default=None,
        description="The roles the protocol fixture played; any makes the run protocol-fixture "
        "(null before per-role workers).",
    )
    manifest_sha256: str
    arms: dict[str, ArmSummary]
    frozen_lessons: int = Field(
        description="Lessons in the frozen store the memory arm recalled from (0: no memory)."
    )
    paired: Paired
    paired_placebo: Paired | None = Field(
        default=None,
        description="Memory against the placebo arm (--control placebo), by the same rule as "
        "paired; null without that arm.",
    )
    power_note: str
    byte_accounting: dict[str, str]
    accounting_version: int = ACCOUNTING_VERSION
    time_comparisons: Literal["sequential", "confounded"] = Field(
        default="sequential",
        description="confounded: trials ran side by side (--jobs, --executor ray), so their "
        "times compete for the machine and are not compared; every recall figure stands.",
    )
    executor: dict[str, Any] = Field(
        default_factory=lambda: {"kind": "sequential", "jobs": 1},
        description="Where the trials ran: sequential, a local pool (--jobs) or Ray.",
    )
    controller: ControllerRecord | None = Field(
        default=None, description="What ran the evaluation (null in older summaries)."
    )
    worker_identity: WorkerIdentity | None = Field(
        default=None, description="manifest.json's workerIdentity (the author's)."
    )
    verification_scope: dict[str, Any] | None = Field(
        default=None, description="manifest.json's verificationScope."
    )
    implementation_hashes: dict[str, Any] | None = Field(
        default=None, description="manifest.json's implementationHashes."
    )


class ManifestReceipt(ReceiptModel):
    """``manifest.json``: what was run, with which settings, worker and implementation."""

    lorelab_version: str
    manifest_id: str
    manifest_sha256: str
    dataset: str
    runner: RunnerName
    settings: Settings
    order_seed: int
    evidence_kind: EvidenceKind
    worker_identity: WorkerIdentity | None = Field(
        description="The author's worker identity (null: binding failed); as roleIdentities.author."
    )
    role_identities: PerRole[WorkerIdentity] | None = Field(
        default=None,
        description="Each role's bound worker identity; roles sharing a worker share one binding. "
        "Null when preflight could not bind them.",
    )
    worker_identity_error: str | None
    verification_scope: dict[str, Any]
    implementation_hashes: dict[str, Any]
    byte_accounting: dict[str, str] = Field(default_factory=lambda: dict(BYTE_ACCOUNTING))
    accounting_version: int = ACCOUNTING_VERSION
    schedule: list[ScheduledTrial]
    manifest: LearningManifest | None = Field(
        default=None,
        description="The frozen manifest content: the parsed, validated manifest that was run "
        "(its canonical JSON hashes to manifestSha256). Null in older receipts.",
    )


class PreflightReceipt(ReceiptModel):
    """``preflight.json``: whether every role's worker identity could be bound."""

    ok: bool
    error: str | None


class HistoryItem(RecordModel):
    """One history entry's historical validation."""

    id: str
    valid: bool
    reason: str
    stability: Stability


class HistoryValidation(ReceiptModel):
    """``history-validation.json``: every history entry, valid or refused."""

    items: list[HistoryItem]


class SharedPreparation(ReceiptModel):
    """``shared-preparation.json``: the frozen store both arms' trials see (memory arm only)."""

    frozen_store_sha256: str
    frozen_store_receipt: str
    lessons: list[str]
    refused_history: list[str]


class LabelsReceipt(ReceiptModel):
    """``labels-FIXTURE.json``: why a fixture's labels failed, with every ground-truth run."""

    fixture: str
    reason: str
    executions: dict[str, list[Execution]]


class ControllerReceipt(ReceiptModel):
    """``controller.json``: how the run ended and how long each phase took (null: not reached)."""

    outcome: str
    elapsed_ms: int
    setup_ms: int | None
    shared_preparation_ms: int | None
    ground_truth_ms: int | None
    trials_ms: int | None
