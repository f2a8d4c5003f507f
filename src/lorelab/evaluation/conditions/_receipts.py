"""The receipts the four-condition runner writes, as models: preflight, one per run, the Dream,
the run's end (complete or aborted), and the protocol's runs-file record.

Some keys appear only once they apply (a seeding receipt only when the memory was seeded, the
lock only once it was written): such fields are listed in ``_OMIT_UNSET`` and left out of the
JSON unless they were set, so absent stays absent rather than turning into ``null``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from lorelab._model import OutputModel, ReceiptModel, RecordModel
from lorelab.evaluation.conditions._manifest import Condition, ConditionsManifest, HostSpec
from lorelab.evaluation.conditions._memory import LockReceipt
from lorelab.evaluation.conditions._profiles import UnsupportedOperation
from lorelab.evaluation.conditions._verify import VerifyReceipt
from lorelab.io import Confinement, SandboxKind
from lorelab.workers import RoleReceipt, WorkerIdentity

BYTE_ACCOUNTING: Final[dict[str, str]] = {
    "inputBytes": (
        "UTF-8 length of the canonical JSON of the host payload before transportBudget is appended"
    ),
    "outputBytes": "UTF-8 length of the canonical JSON of the parsed host response",
}


class _OmitUnset(BaseModel):
    """Mixin: fields named in ``_OMIT_UNSET`` are written only when they were set."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_unset(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        fields = type(self).model_fields
        for name in self._OMIT_UNSET:
            if name not in self.model_fields_set:
                alias = fields[name].alias if info.by_alias else None
                data.pop(alias or name, None)
        return data


# ---------------------------------------------------------------------------- preflight


class ProjectReceipt(RecordModel):
    """The project snapshot every condition's copy is made from."""

    source: str
    sha256: str
    files: int


class HostModel(RecordModel):
    """The model the host was declared, asked and told to use, and how claims are judged."""

    declared: str | None
    requested: str | None
    passed_as: str | None
    rule: str = (
        "each response's claimed model is recorded per run; a claim that does not contain the "
        "declared model (case-insensitively) is flagged host-model-mismatch; an unreported "
        "claim stays null"
    )


class TimeBudget(RecordModel):
    """The host's time budget per run."""

    time_budget_s: int
    max_attempts: int
    max_per_call_s: int
    counts: str = "host-call time only; verify commands have their own timeout"


class HostReceipt(RecordModel):
    """The host: its argv, declaration, bound identity, model and budget."""

    argv: list[str]
    declared: HostSpec
    identity: WorkerIdentity
    evidence_kind: Literal["protocol-fixture"] | None
    model: HostModel
    time_budget: TimeBudget
    settings_and_permissions: str = "recorded as declared; lorelab cannot apply them"


class EnvironmentReceipt(RecordModel):
    """The environment of hosts and verify commands."""

    path: str = "the directory of lorelab's Python first, then the inherited PATH"
    removed: list[str] = Field(default_factory=lambda: ["LORELAB_HOME"])
    set: dict[str, str] = Field(default_factory=lambda: {"PYTHONDONTWRITEBYTECODE": "1"})


class MemoryReceipt(RecordModel):
    """The memory under test: profile, server argv, home, the tools it listed, what the
    profile cannot do, the one ``agent_id`` it sends (when it sends one) and who runs the
    Dream checks."""

    profile: str
    argv: list[str]
    argv_kind: Literal["custom", "default"]
    home: str | None
    tools: list[str] | None = None
    candidate_checks: str | None
    project_for_checks: str = (
        "a pristine copy of the project snapshot (the default lorelab server's --project), "
        "removed when the run ends"
    )
    # Defaults keep output directories written before profiles were adapters readable
    # (``lorelab report`` renders them): nothing was recorded then, so unknown stays null.
    unsupported: list[UnsupportedOperation] | None = Field(
        default=None,
        description="Protocol operations the profile cannot perform, each with the reason "
        "(null: not recorded, in receipts written before profiles were adapters).",
    )
    agent_id: str | None = Field(
        default=None, description="The agent_id sent on every call; null when none is sent."
    )
    dream_checks: str = Field(
        default="not recorded", description="Who runs Dream candidates' checks, and how."
    )


class SeededExperience(_OmitUnset, RecordModel):
    """One seed experience as the memory recorded it (and, when the memory assigns its own
    ids, the id the manifest declares for it)."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = ("declared_id",)

    id: Any
    verified: Any
    declared_id: str | None = None


class SeededSkill(_OmitUnset, RecordModel):
    """The seed Skill as the memory promoted it (and, when the memory assigns its own ids, the
    declared id and the name the seed file gave it)."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = ("declared_id", "seed_name")

    id: Any
    name: Any
    declared_id: str | None = None
    seed_name: Any = None


class SeedingReceipt(_OmitUnset, RecordModel):
    """What seeding the memory recorded; for a memory that assigns its own ids, the map from
    each declared id to the memory's and the rule it follows."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = ("ids", "ids_rule")

    experiences: list[SeededExperience]
    skill: SeededSkill
    ids: dict[str, str] | None = None
    ids_rule: str | None = None


class PreflightReceipt(_OmitUnset, ReceiptModel):
    """``preflight.json``: everything checked and bound before the first run."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = (
        "seeding",
        "seeds_in_memory",
        "holdouts_in_memory",
        "lock_requested",
        "lock",
    )

    evaluation_id: str
    started_at: str
    manifest_sha256: str
    byte_accounting: dict[str, str] = Field(default_factory=lambda: dict(BYTE_ACCOUNTING))
    project: ProjectReceipt
    host: HostReceipt
    verification_scope: dict[str, Any]
    verify_timeout_s: float
    environment: EnvironmentReceipt = Field(default_factory=EnvironmentReceipt)
    memory: MemoryReceipt
    seeding: SeedingReceipt | None = None
    seeds_in_memory: dict[str, Any] | None = None
    holdouts_in_memory: dict[str, Any] | None = None
    lock_requested: bool | None = None
    lock: LockReceipt | None = None

    def lock_active(self) -> bool:
        """Whether a lock may have been written (it was, or writing it had begun)."""
        return "lock" in self.model_fields_set or bool(self.lock_requested)


class ManifestReceipt(_OmitUnset, RecordModel):
    """``manifest.json``: the manifest as run, with the SHA-256 of its file."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = ("confinement",)

    sha256: str
    manifest: ConditionsManifest
    confinement: Confinement | None = Field(
        default=None,
        description="The sandbox verify and check commands ran in, as probed before the run, "
        "and whether --allow-unsandboxed was given (absent in older receipts).",
    )


# ---------------------------------------------------------------------------- one run


class VerifySnapshot(OutputModel):
    """A verify run as the runs file records it: exit code and output hash."""

    exit_code: int | None
    output_sha256: str


class DreamCheckResult(_OmitUnset, RecordModel):
    """One command of a candidate's check, as the memory reported it (or, when the runner ran
    it, with the SHA-256 of its output and the confinement it really ran in)."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = ("output_sha256", "sandbox")

    command: Any
    expected_exit_code: Any
    exit_code: Any
    status: Any
    output_sha256: str | None = None
    sandbox: SandboxKind | None = None


class DreamCheck(_OmitUnset, RecordModel):
    """One Dream candidate's check and, when it passed, its promotion. When the runner ran the
    checks, ``memoryStatus`` is the status the memory gave the candidate on the evidence, and
    ``promotedKind`` what the promotion made (MemCoder: a Principle, not a Skill)."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = (
        "check_run_id",
        "error",
        "memory_status",
        "promoted_kind",
    )

    candidate_id: str
    passed: bool = False
    results: list[DreamCheckResult] = Field(default_factory=list)
    check_run_id: Any = None
    error: str | None = None
    memory_status: Any = None
    promoted_kind: Any = None


class ConditionRun(_OmitUnset, OutputModel):
    """One task x condition in the runs file: the protocol's snake_case keys, then lorelab's."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = (
        "rework_count",
        "retrieval_relevant",
        "memory_calls_failed",
        "unchecked_items_served",
        "own_solutions_served",
        "served_tiers",
        "dream_candidate_ids",
        "dream_checks",
        "dream_promoted_ids",
        "dream_items_served",
    )

    task_id: str
    condition: Condition
    passed: bool
    # The host's meaningful edit-then-verify cycles after its first (docs/conditions.md); left
    # out when the host did not report its cycles, never null (MemCoder refuses a null).
    rework_count: int | None = None
    # Left out of baseline rows (no retrieval happened), never null: MemCoder's evaluate
    # refuses a null retrieval_relevant, and absent is true for both readers.
    retrieval_relevant: bool | None = None
    guidance_tokens: int
    notes: str
    holdout: bool
    plan_id: str | None
    skill_id: str | None
    skill_ids: list[str]
    brief_id: str | None
    verification_before: VerifySnapshot | None
    verification_after: VerifySnapshot | None
    changed_files: list[str]
    verify_files_edited: list[str]
    host_calls: int
    # Defaults keep receipts written before hosts reported cycles readable (null: not
    # recorded then).
    reprompt_count: int | None = None
    host_cycles: int | None = None
    host_failure: str | None
    memory_calls_failed: list[str] | None = None
    host_model_declared: str | None
    host_models_claimed: list[str]
    host_model_mismatch: bool | None
    evidence_kind: Literal["protocol-fixture"] | None
    flags: list[str]
    receipt: str
    unchecked_items_served: bool | None = None
    own_solutions_served: list[str] | None = None
    # How many served items the memory graded match / related; left out when it graded none.
    served_tiers: dict[Literal["match", "related"], int] | None = None
    dream_candidate_ids: list[str] | None = None
    dream_checks: list[DreamCheck] | None = None
    dream_promoted_ids: list[str] | None = None
    dream_items_served: list[str] | None = None


class HostResponse(RecordModel):
    """What a host answered: its summary, the commands and the edit-then-verify cycles it
    reports (``cycles`` null when it reported none)."""

    summary: str
    commands: Any
    cycles: Any = None


class AttemptReceipt(_OmitUnset, RecordModel):
    """One host attempt: the call's receipt, then (when it answered) its response and the
    verify command's result after it."""

    _OMIT_UNSET: ClassVar[tuple[str, ...]] = ("response", "verification")

    receipt: RoleReceipt
    response: HostResponse | None = None
    verification: VerifyReceipt | None = None


class GuidanceReceipt(RecordModel):
    """What a memory condition handed the host, where it came from, and what it named."""

    payload: dict[str, Any] | None
    brief_id: str | None
    plan_id: str | None
    skill_id: str | None
    skill_ids: list[str]
    served_ids: list[str]
    served_checked: bool
    served_items: list[dict[str, Any]]
    tokens_estimate: int
    relevance_keys: list[str]
    named_keys: list[str]
    note: str | None
    error: str | None


class RunReceipt(ReceiptModel):
    """``runs/TASK--CONDITION.json``: one run in full; ``record`` is its runs-file entry."""

    evaluation_id: str
    byte_accounting: dict[str, str] = Field(default_factory=lambda: dict(BYTE_ACCOUNTING))
    task_id: str
    condition: Condition
    holdout: bool
    finished_at: str
    record: ConditionRun
    verification_before: VerifyReceipt | None
    verification_after: VerifyReceipt | None
    guidance: GuidanceReceipt | None
    host_summary: str | None
    host_commands: list[dict[str, Any]]
    host_model_declared: str | None
    host_models_claimed: list[str]
    host_model_claimed: str | None
    host_time_ms: int
    attempts: list[AttemptReceipt]
    changed_files: list[str]
    verify_files_edited: list[str]
    flags: list[str]
    worker: dict[str, Any] | None = Field(
        default=None,
        description="Where a distributed run ran (node, process, the project snapshot's "
        "sha256 checked there); null for a sequential run.",
    )


# ---------------------------------------------------------------------------- the run's end


class DreamReceipt(RecordModel):
    """``dream.json``: the Dream step's candidates, checks and promotions."""

    supported: bool
    candidate_ids: list[str]
    checks: list[DreamCheck]
    promoted: dict[str, str]
    errors: list[str]
    tool_errors: int


class RunsDocument(OutputModel):
    """The runs file: the protocol's ``runs`` first, then what ties it to its run."""

    runs: list[ConditionRun]
    evaluation_id: str
    manifest_sha256: str
    evidence_kind: Literal["protocol-fixture"] | None


class RunFinished(ReceiptModel):
    """``run.json``: the run completed (whatever each run's outcome)."""

    status: Literal["complete"] = "complete"
    evaluation_id: str
    finished_at: str
    runs: int
    passed: int
    host_failures: int
    memory_failures: int
    model_mismatches: int
    flagged_runs: int
    identity_changes: int
    evidence_kind: Literal["protocol-fixture"] | None
    exit_code: int
    byte_accounting: dict[str, str] = Field(default_factory=lambda: dict(BYTE_ACCOUNTING))
    runs_file: str
    executor_failures: int = 0
    executor: dict[str, Any] = Field(
        default_factory=lambda: {"kind": "sequential", "jobs": 1},
        description="Where the runs ran: sequential, a local pool (--jobs) or Ray.",
    )
    lock: str = "active until `lorelab eval conditions finalize` clears it"
    finalized: bool = False


class RunAborted(ReceiptModel):
    """``aborted.json``: the run stopped; the runs it completed are kept, not a runs file."""

    evaluation_id: str
    aborted_at: str
    outcome: Literal["interrupted", "failed", "crashed"]
    error: str
    runs_completed: int
    runs: list[ConditionRun]
    lock_active: bool
    recovery: str = "lorelab eval conditions finalize --output DIR clears the lock"
    statement: str = "the run did not complete; these runs are not a runs file"
