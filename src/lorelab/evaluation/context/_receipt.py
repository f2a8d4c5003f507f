"""Receipts of a context evaluation: the models, the evaluator's identity, and the Markdown view.

Receipts hold metrics, digests and identities only: never answer text.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt
from pydantic.alias_generators import to_camel

import lorelab
from lorelab.context import BoundaryKind
from lorelab.evaluation.context._fixture import Provenance, Usage, Verdict
from lorelab.evaluation.context._score import FAILURE_CLASSES, FailureCounts
from lorelab.io import SCRIPT_HASH_CAP, sha256_file

RECEIPT_KIND: Final = "lorelab.context-evaluation"
RECEIPT_JSON: Final = "context-receipt.json"
RECEIPT_MARKDOWN: Final = "context-receipt.md"
ENTRY_POINT: Final = "lorelab.cli.main"

Mode = Literal["fixture", "trial"]

BYTE_ACCOUNTING: Final[dict[str, str]] = {
    "inputBytes": (
        "UTF-8 length of the canonical JSON of the role payload before transportBudget is appended"
    ),
    "outputBytes": "UTF-8 length of the canonical JSON of the parsed response",
    "canonicalJson": "UTF-8, ',' and ':' separators without whitespace, keys in given order",
}


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class Qualification(_Model):
    """What kind of evidence a record is; records are compared only under equal qualification."""

    mode: Mode = Field(description="'fixture' (a recorded trace) or 'trial' (simulated).")
    evidence_kind: str = Field(
        description="'recorded' for fixtures; 'protocol-fixture' or 'agent' for trials."
    )
    synthetic: bool = Field(description="Whether the record is synthetic.")
    scorer: str = Field(description="Version of the scoring rules.")
    managed_boundary: BoundaryKind | None = Field(
        default=None, description="The boundary a trial managed; null for fixtures."
    )
    max_turns: int | None = Field(default=None, description="A trial's turn cap; null otherwise.")
    scoring: Literal["full", "mechanical"] = Field(
        default="full",
        description="'mechanical' for an unlabelled fixture: boundaries, forbidden retries and "
        "completeness are scored, facts are not.",
    )


class CallUsage(_Model):
    """Usage one worker call reported; null means not reported."""

    input_tokens: NonNegativeInt | None = Field(default=None, description="Input tokens.")
    output_tokens: NonNegativeInt | None = Field(default=None, description="Output tokens.")
    cost_usd: float | None = Field(default=None, alias="costUSD", description="Cost in USD.")


class CallMetrics(_Model):
    """Metrics of one worker call in a trial (no response text)."""

    turn: int = Field(description="1-based turn number.")
    spawned: bool = Field(description="Whether the worker process was started.")
    exit_code: int | None = Field(description="The worker's exit code, if it exited.")
    duration_ms: int | None = Field(description="Measured duration of the call.")
    input_bytes: int | None = Field(description="Canonical payload bytes (before the budget).")
    output_bytes: int | None = Field(description="Canonical response bytes.")
    usage: CallUsage = Field(description="Usage as the worker reported it.")
    model_claimed: str | None = Field(description="The model the worker claims it used.")
    failure: str | None = Field(description="The call's failure class, or null.")


class SourceOwner(_Model):
    """Marks the requesting turn a trial appends as synthetic, owned by the evaluator."""

    kind: Literal["synthetic"] = Field(default="synthetic", description="Always 'synthetic'.")
    owner: str = Field(description="Who owns the turn: the evaluator.")
    request_index: int = Field(description="The exact index of the requesting turn.")


class TrialInfo(_Model):
    """How a simulated trial ran."""

    trial_id: str = Field(description="Trial id: <fixture id>#<managed boundary>.")
    managed_boundary: BoundaryKind = Field(description="The boundary the trial managed.")
    boundary_index: int = Field(description="Index of the managed boundary event.")
    checkpoint_id: str = Field(description="The checkpoint written at the boundary.")
    checkpoint_sha256: str = Field(description="SHA-256 of the checkpoint's canonical JSON.")
    source_owner: SourceOwner = Field(description="The requesting turn's descriptor.")
    agent_argv: list[str] = Field(description="The worker argv.")
    worker_identity_sha256: str = Field(
        description="SHA-256 of the canonical JSON of the worker identity bound for the trial."
    )
    evidence_kind: str = Field(
        description="'protocol-fixture' if the worker said so, else 'agent'."
    )
    turns_used: int = Field(description="Worker calls made.")
    max_turns: int = Field(description="The turn cap.")
    turn_cap_reached: bool = Field(description="Whether the cap ended the trial without answer.")
    failure: str | None = Field(description="Why the trial stopped early, or null.")
    usage_out_of_range: list[str] = Field(
        default_factory=list,
        description="Usage fields (camelCase) whose reported values exceed the usage maxima; "
        "the trial's usage leaves them null (the calls keep what was reported).",
    )
    calls: list[CallMetrics] = Field(description="One entry per worker call.")
    record_digest: str = Field(description="SHA-256 of the canonical JSON of the scored record.")


class RecordResult(_Model):
    """The outcome of one scored record: a fixture, or one trial built from a fixture."""

    record_id: str = Field(description="Fixture id, or trial id for trials.")
    fixture_id: str = Field(description="The fixture's id.")
    fixture_path: str = Field(description="The fixture path as given.")
    fixture_digest: str = Field(description="SHA-256 of the fixture file's bytes.")
    boundary_kinds: list[BoundaryKind] = Field(description="Required boundaries of the record.")
    observed_boundaries: list[BoundaryKind] = Field(
        description="Top-level boundary events recorded, in order."
    )
    failures: FailureCounts = Field(description="Failure count of every class.")
    forbidden_history: NonNegativeInt | None = Field(
        default=None,
        description="Forbidden commands run before the counting window opened (source history "
        "the record starts from): reported, not failures. Null in receipts of scorer 2 or older.",
    )
    verdict: Verdict = Field(description="PASS only with zero failures of every class.")
    label: Verdict | None = Field(description="The independent label; null for trials.")
    label_agrees: bool | None = Field(description="Whether verdict equals label; null if no label.")
    provenance: Provenance = Field(description="Source revision, run and model identities.")
    usage: Usage = Field(description="Usage as recorded (trials: as reported); null = unknown.")
    synthetic: bool = Field(description="Whether the record is synthetic.")
    qualification: Qualification = Field(description="What kind of evidence this is.")
    trial: TrialInfo | None = Field(default=None, description="Trial details; null for fixtures.")
    facts_scored: bool = Field(
        default=True,
        description="False for an unlabelled fixture: its missingFacts and wrongFacts are 0 "
        "because it states no expected facts, not because an answer was checked.",
    )


class UsageTotals(_Model):
    """Usage summed over records: a field unknown in any record is unknown (null) in the sum.

    No per-record maximum applies to a total, but every record's usage is bounded, so a total
    is always finite.
    """

    model_config = ConfigDict(allow_inf_nan=False)

    input_tokens: NonNegativeInt | None = Field(description="Input tokens.")
    output_tokens: NonNegativeInt | None = Field(description="Output tokens.")
    cost_usd: NonNegativeFloat | None = Field(alias="costUSD", description="Cost in USD.")
    wall_ms: NonNegativeInt | None = Field(description="Wall time in ms.")


class Summary(_Model):
    """Totals over every record."""

    records: int = Field(description="Records scored.")
    passes: int = Field(description="Records with verdict PASS.")
    failures: int = Field(description="Records with verdict FAIL.")
    label_disagreements: int = Field(description="Records whose verdict differs from the label.")
    failure_totals: FailureCounts = Field(description="Each failure class summed.")
    usage_totals: UsageTotals = Field(description="Usage summed; null if any record's is unknown.")


class EvaluatorIdentity(_Model):
    """Which evaluator produced the receipt."""

    lorelab_version: str = Field(description="The installed lorelab version.")
    git_revision: str | None = Field(description="Git revision of the source tree, if a checkout.")
    git_dirty: bool | None = Field(
        default=None,
        description="Whether tracked files of the checkout differ from gitRevision (staged or "
        "not); null when unknown.",
    )
    entry_point: str = Field(description="The CLI entry point module.")
    module_hashes: dict[str, str] = Field(
        description="SHA-256 of every lorelab module loaded, the entry point included."
    )


class CostDeltas(_Model):
    """Current minus baseline; null when either side is unknown."""

    model_config = ConfigDict(allow_inf_nan=False)

    input_tokens: int | None = Field(description="Input tokens.")
    output_tokens: int | None = Field(description="Output tokens.")
    cost_usd: float | None = Field(alias="costUSD", description="Cost in USD.")
    wall_ms: int | None = Field(description="Wall time in ms.")


class FailureDeltas(_Model):
    """Current minus baseline count of each failure class."""

    missing_facts: int = Field(description="Delta of missing facts.")
    wrong_facts: int = Field(description="Delta of wrong facts.")
    unsupported_claims: int = Field(description="Delta of unsupported claims.")
    forbidden_retries: int = Field(description="Delta of forbidden retries.")
    missing_boundaries: int = Field(description="Delta of missing boundaries.")
    incomplete_record: int = Field(description="Delta of incomplete-record findings.")


class RecordDelta(_Model):
    """Deltas of one record."""

    record_id: str = Field(description="The record compared.")
    passes: int = Field(description="1 if it newly passes, -1 if it newly fails, else 0.")
    failures: FailureDeltas = Field(description="Failure deltas.")
    cost: CostDeltas = Field(description="Cost deltas.")


class Deltas(_Model):
    """Outcome and cost deltas of a comparable baseline."""

    passes: int = Field(description="Current passes minus baseline passes.")
    failures: FailureDeltas = Field(description="Failure class totals, current minus baseline.")
    cost: CostDeltas = Field(description="Cost totals, current minus baseline.")
    records: list[RecordDelta] = Field(description="Per-record deltas.")


class Comparison(_Model):
    """The result of comparing with a baseline receipt."""

    baseline_path: str = Field(description="The baseline receipt path as given.")
    baseline_sha256: str = Field(description="SHA-256 of the baseline receipt's bytes.")
    comparable: bool = Field(description="Whether the two runs may be compared.")
    reasons: list[str] = Field(description="Why not, when not comparable.")
    deltas: Deltas | None = Field(description="Deltas, only when comparable.")


class ContextReceipt(_Model):
    """The receipt of one ``lorelab eval context`` run."""

    schema_version: Literal[1] = Field(default=1, description="Version of this receipt format.")
    kind: Literal["lorelab.context-evaluation"] = Field(
        default=RECEIPT_KIND, description="What this file is."
    )
    run_id: str = Field(description="Identity of this evaluation run.")
    created_at: AwareDatetime = Field(description="When the run finished (UTC).")
    mode: Mode = Field(description="'fixture' or 'trial'.")
    evaluator: EvaluatorIdentity = Field(description="The evaluator's identity.")
    records: list[RecordResult] = Field(description="One result per scored record.")
    summary: Summary = Field(description="Totals.")
    comparison: Comparison | None = Field(default=None, description="Baseline comparison, if any.")
    byte_accounting: dict[str, str] | None = Field(
        default=None, description="What the trial calls' byte counts mean; null in fixture mode."
    )
    exit_code: int = Field(description="The exit code the run ended with.")


def int_total(values: Sequence[int | None]) -> int | None:
    """The exact sum, or ``None`` when any value is unknown."""
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def cost_total(values: Sequence[float | None]) -> float | None:
    """The correctly rounded sum of finite costs (to 10 decimals), or ``None`` if any is unknown.

    Callers pass bounded costs (at most :data:`MAX_COST_USD` each), so the sum is finite.
    """
    if any(v is None for v in values):
        return None
    return round(math.fsum(v for v in values if v is not None), 10)


def sum_usage(usages: Sequence[Usage]) -> UsageTotals:
    """Sum usage field by field; a field unknown in any record is unknown in the sum."""
    return UsageTotals(
        input_tokens=int_total([u.input_tokens for u in usages]),
        output_tokens=int_total([u.output_tokens for u in usages]),
        costUSD=cost_total([u.cost_usd for u in usages]),
        wall_ms=int_total([u.wall_ms for u in usages]),
    )


def summarise(records: list[RecordResult]) -> Summary:
    """Totals over ``records``."""
    totals = dict.fromkeys(FAILURE_CLASSES, 0)
    for record in records:
        for name, count in record.failures.as_dict().items():
            totals[name] += count
    passes = sum(1 for record in records if record.verdict == "PASS")
    return Summary(
        records=len(records),
        passes=passes,
        failures=len(records) - passes,
        label_disagreements=sum(1 for record in records if record.label_agrees is False),
        failure_totals=FailureCounts.model_validate(totals),
        usage_totals=sum_usage([record.usage for record in records]),
    )


def source_tree() -> Path:
    """The lorelab source tree: the checkout holding ``src/lorelab``, else the package itself."""
    package = Path(lorelab.__file__).resolve().parent
    root = package.parent.parent
    if package.parent.name == "src" and (root / "pyproject.toml").is_file():
        return root
    return package


def _git(tree: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(tree), *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=10,
            check=False,
            # Read-only: never take the index lock another git process may hold.
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None


def git_revision(tree: Path) -> str | None:
    """The commit checked out in ``tree`` when it is a git checkout; ``None`` otherwise."""
    if not (tree / ".git").exists():
        return None
    result = _git(tree, "rev-parse", "--verify", "HEAD")
    if result is None:
        return None
    revision = result.stdout.strip()
    return revision if result.returncode == 0 and revision else None


def git_dirty(tree: Path) -> bool | None:
    """Whether tracked files of the checkout ``tree`` differ from HEAD (staged or not).

    Untracked files do not count (as in ``git describe --dirty``): the module hashes already
    bind every module that was loaded. ``None`` when ``tree`` is no checkout or git fails.
    """
    if not (tree / ".git").exists():
        return None
    result = _git(tree, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules")
    if result is None or result.returncode != 0:
        return None
    return bool(result.stdout.strip())


def _entry_point_module() -> str:
    for entry in entry_points(group="console_scripts", name="lorelab"):
        return entry.value.split(":", 1)[0]
    return ENTRY_POINT


def evaluator_identity() -> EvaluatorIdentity:
    """The lorelab version, the git revision if any, and hashes of every loaded lorelab module.

    The entry point module is hashed from its file even when it was not imported (a library
    caller), so the receipt always binds the program a user runs.
    """
    files: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        if name == "lorelab" or name.startswith("lorelab."):
            file = getattr(module, "__file__", None)
            if file:
                files[name] = file
    entry = _entry_point_module()
    if entry not in files:
        spec = importlib.util.find_spec(entry)
        if spec is not None and spec.origin:
            files[entry] = spec.origin
    tree = source_tree()
    revision = git_revision(tree)
    return EvaluatorIdentity(
        lorelab_version=lorelab.__version__,
        git_revision=revision,
        git_dirty=git_dirty(tree) if revision is not None else None,
        entry_point=entry,
        module_hashes={
            name: sha256_file(files[name], cap=SCRIPT_HASH_CAP) for name in sorted(files)
        },
    )


def _cell(value: object) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    # One line: an id with a newline or a pipe must not break the table it sits in.
    return " ".join(str(value).split()).replace("|", "\\|")


def render_markdown(receipt: ContextReceipt) -> str:
    """A Markdown view of the receipt: metrics only."""
    s = receipt.summary
    lines = [
        f"# Context evaluation ({receipt.mode} mode)",
        "",
        f"- run: {receipt.run_id}",
        f"- finished: {receipt.created_at.isoformat()}",
        f"- lorelab {receipt.evaluator.lorelab_version}, git revision "
        f"{_cell(receipt.evaluator.git_revision)} (uncommitted changes: "
        f"{_cell(receipt.evaluator.git_dirty)}), {len(receipt.evaluator.module_hashes)} "
        "evaluator modules hashed",
        f"- records: {s.records}; PASS {s.passes}; FAIL {s.failures}; "
        f"label disagreements {s.label_disagreements}",
        f"- exit code: {receipt.exit_code}",
        "",
        "| record | verdict | label | agrees | missing facts | wrong facts | unsupported | "
        "forbidden retries | missing boundaries | incomplete | forbidden in history "
        "(not failures) | synthetic | digest |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in receipt.records:
        counts = r.failures.as_dict()
        lines.append(
            "| "
            + " | ".join(
                [
                    _cell(r.record_id),
                    r.verdict if r.facts_scored else f"{r.verdict} (facts not scored)",
                    r.label or "none",
                    "n/a" if r.label_agrees is None else _cell(r.label_agrees),
                    *(str(counts[name]) for name in FAILURE_CLASSES),
                    _cell(r.forbidden_history),
                    _cell(r.synthetic),
                    r.fixture_digest[:12],
                ]
            )
            + " |"
        )
    u = s.usage_totals
    lines += [
        "",
        f"Usage totals (unknown if any record's is unknown): input tokens "
        f"{_cell(u.input_tokens)}, output tokens {_cell(u.output_tokens)}, cost USD "
        f"{_cell(u.cost_usd)}, wall ms {_cell(u.wall_ms)}.",
    ]
    trials = [r.trial for r in receipt.records if r.trial is not None]
    if trials:
        lines += ["", "## Trials", "", "| trial | turns | cap reached | failure | evidence |"]
        lines.append("|---|---|---|---|---|")
        for t in trials:
            lines.append(
                f"| {_cell(t.trial_id)} | {t.turns_used}/{t.max_turns} | "
                f"{_cell(t.turn_cap_reached)} | {t.failure or 'none'} | {t.evidence_kind} |"
            )
    c = receipt.comparison
    if c is not None:
        lines += ["", "## Comparison with baseline", "", f"- baseline: {c.baseline_path}"]
        lines.append(f"- baseline sha256: {c.baseline_sha256}")
        if not c.comparable:
            lines.append("- **not comparable**; no deltas are reported:")
            lines += [f"  - {reason}" for reason in c.reasons]
        elif c.deltas is not None:
            d = c.deltas
            lines.append(f"- passes: {d.passes:+d}")
            for name, value in d.failures.model_dump(by_alias=True).items():
                lines.append(f"- {name}: {value:+d}")
            for name, value in d.cost.model_dump(by_alias=True).items():
                lines.append(f"- {name}: {_cell(value)}")
    return "\n".join(lines) + "\n"
