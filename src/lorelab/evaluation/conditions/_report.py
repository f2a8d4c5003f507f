"""The report of ``lorelab eval conditions decide`` as models: per-condition figures, the
paired comparisons, the decision and its verdicts, flagged runs, Skills to review, and what
cannot be proved."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from lorelab._model import ReceiptModel, RecordModel
from lorelab.evaluation.conditions._manifest import Thresholds

DECIDED_CONDITION: Final = "dreaming"
# The conditions MemCoder's own evaluation summarizes (a runs file without dreaming rows).
MEMCODER_CONDITIONS: Final = ("baseline", "memory_guided", "skill_planned")

Verdict = Literal[
    "advance", "do-not-advance", "inconclusive", "invalid", "incomplete", "insufficient"
]
# No decision was made: the runs are no evidence (invalid), the decided condition has no runs
# (incomplete), or they do not reach what a decision needs (insufficient).
FAILED_VERDICTS: Final[tuple[Verdict, ...]] = ("invalid", "incomplete", "insufficient")
HoldoutSource = Literal["manifest", "option", "runs", "all-tasks"]
ReworkSource = Literal["host-cycles", "reprompts", "as-written"]
REWORK_SOURCES: Final[dict[str, str]] = {
    "host-cycles": "the host's own edit-then-verify cycles after its first (unknown when the "
    "host did not report them)",
    "reprompts": "lorelab's re-prompts after a failed verification: this runs file was written "
    "before hosts reported their cycles, so its rework is not the host's own",
    "as-written": "as the runs file's writer counted it",
}

CANNOT_PROVE: Final = (
    "Causality from a small sample: with few holdout tasks a difference can be chance; the "
    "exact sign test's p-value says how likely, and the power note says what the sample can "
    "reach at all.",
    "Task quality: whether the tasks are representative, and whether each expected behaviour "
    "was written well, is not measured.",
    "Anything the verify command does not measure: a pass means only that one command exited "
    "0 after the host's edits.",
    "Generalisation beyond this host, model, settings, project and memory contents.",
    "Usefulness of guidance: retrieval_relevant is a mechanical rule (the guidance names the "
    "task's declared files, commands or verify command), not a judgement that it helped.",
)
FIXTURE_STATEMENT: Final = (
    "These runs were produced by the deterministic protocol-fixture host; they exercise the "
    "protocol end to end and are never evidence that memory helps."
)


class ConditionSummary(RecordModel):
    """Figures for one condition over all its runs."""

    condition: str
    runs: int
    memory_failures: int = Field(
        description="Runs whose memory call failed: left out of every figure below."
    )
    executor_failures: int = Field(
        default=0,
        description="Runs whose worker process or node died: left out of every figure below.",
    )
    passed: int
    pass_rate: float | None = Field(description="Over the measured runs; null when none.")
    mean_rework: float | None = Field(description="Over the runs that state rework_count.")
    rework_known: int = Field(default=0, description="Runs that state rework_count.")
    retrieval_relevance_rate: float | None = Field(
        description="Share of runs with retrieval_relevant true, over runs that state it."
    )
    relevance_known: int = Field(description="Runs that state retrieval_relevant.")
    mean_guidance_tokens: float | None = Field(
        description="Mean estimated guidance tokens, over runs that state it."
    )
    guidance_tokens_known: int


class TaskPair(RecordModel):
    """One holdout task: baseline against the condition."""

    task_id: str
    baseline_passed: bool
    condition_passed: bool
    baseline_rework: int | None = Field(description="null when the run does not state it.")
    condition_rework: int | None = Field(description="null when the run does not state it.")
    difference: int = Field(
        description=(
            "+1 when the condition did better (passed where baseline failed, or both passed "
            "and it needed less rework), -1 when worse, 0 for a tie (both failed is always a "
            "tie: rework of a failed run is no improvement; both passed with a rework count "
            "unknown is a tie too)."
        )
    )
    polluted: bool
    retrieval_relevant: bool | None


class SignTestResult(RecordModel):
    """Exact two-sided sign test over per-task differences; ties excluded."""

    positive: int
    negative: int
    ties: int
    p_value: float


class TokenCost(RecordModel):
    """Estimated guidance tokens on the holdouts."""

    mean_guidance_tokens: float | None
    total_guidance_tokens: int | None
    known: int
    baseline_mean_guidance_tokens: float | None


class PairedComparison(RecordModel):
    """A memory condition paired with baseline on the holdout tasks."""

    condition: str
    holdouts: int = Field(description="Holdout tasks paired (memory failures left out).")
    memory_failures: list[str] = Field(
        description="Holdout tasks left out: the condition's run could not call the memory."
    )
    executor_failures: list[str] = Field(
        default_factory=list,
        description="Holdout tasks left out: a worker process or node of the pair died.",
    )
    baseline_pass_rate: float | None
    condition_pass_rate: float | None
    pass_rate_delta: float | None
    baseline_mean_rework: float | None
    condition_mean_rework: float | None
    rework_delta: float | None = Field(
        description="Mean rework of the condition minus baseline's, over the pairs that state "
        "both; null when none does."
    )
    rework_delta_both_passed: float | None = Field(
        description=(
            "Mean rework of the condition minus baseline's over the holdouts both passed; "
            "null when there are none. Only this rework delta can show an improvement."
        )
    )
    rework_known: int = Field(
        default=0, description="Holdout pairs whose two runs both state rework_count."
    )
    negative_transfer: list[str] = Field(
        description="Holdout tasks baseline passed and the condition failed."
    )
    pollution_rate: float | None
    polluted: list[str] = Field(
        description="Holdout tasks served irrelevant guidance or unchecked items."
    )
    irrelevance_rate: float | None = Field(
        description="Share of holdout runs whose retrieval_relevant is false."
    )
    token_cost: TokenCost
    sign_test: SignTestResult
    tasks: list[TaskPair]


class Decision(RecordModel):
    """The decision for the dreaming condition, with the thresholds it used."""

    condition: str
    verdict: Verdict
    reasons: list[str]
    thresholds: Thresholds
    thresholds_source: Literal["manifest", "defaults"]


class FlaggedRun(RecordModel):
    """A run whose outcome is not a clean measurement, with what flagged it."""

    task_id: str
    condition: str
    holdout: bool
    flags: list[str] = Field(
        description=(
            "host-failure, verify-files-edited, host-model-mismatch, own-solution-served, "
            "unchecked-items-served"
        )
    )


class ReviewRequired(RecordModel):
    """A Skill whose runs failed repeatedly; it needs a review before further use."""

    skill_id: str
    failed_runs: int
    runs: int
    failed_tasks: list[str]


class ConditionsReport(ReceiptModel):
    """The report of ``lorelab eval conditions decide``; the same runs file always gives the
    same report."""

    input_sha256: str
    evidence_kind: str | None = Field(
        description="'protocol-fixture' when any run came from the fixture host, else null."
    )
    tasks: int
    runs: int
    holdout_source: HoldoutSource = Field(
        description=(
            "Where the holdouts came from: the manifest, --holdouts ('option'), the runs' "
            "holdout field, or nowhere ('all-tasks': every task paired, decision insufficient)."
        )
    )
    holdouts: list[str]
    manifest_sha256: str | None = Field(
        description="The manifest SHA-256 the runs file records (the runner writes it), if any."
    )
    manifest_checked: bool = Field(
        description="True when --manifest was given and matched the recorded SHA-256."
    )
    rework_source: ReworkSource = Field(
        default="as-written",
        description=(
            "What rework_count counts in these runs: 'host-cycles' (the host's reported "
            "cycles), 'reprompts' (an older lorelab runs file: lorelab's re-prompts), "
            "'as-written' (a runs file lorelab's runner did not write)."
        ),
    )
    conditions: list[ConditionSummary]
    paired: list[PairedComparison]
    flagged_runs: list[FlaggedRun] = Field(
        description="Runs whose outcome is not a clean measurement; they are kept and counted."
    )
    decision: Decision
    review_required: list[ReviewRequired]
    power_note: str
    cannot_prove: list[str]

    def exit_code(self) -> int:
        """1 when no decision was made (``invalid``, ``incomplete``, ``insufficient``); 0 for
        any decision (``advance``, ``do-not-advance``, ``inconclusive``)."""
        return 1 if self.decision.verdict in FAILED_VERDICTS else 0
