"""Comparison with a baseline receipt: refuse untrustworthy baselines, then compare or explain.

Comparable only with identical fixture digests, boundary kinds, model and qualification for
every record (matched by record id); the source revision is expected to differ.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lorelab.errors import SchemaError
from lorelab.evaluation.context._fixture import Usage, utf8_path
from lorelab.evaluation.context._receipt import (
    Comparison,
    ContextReceipt,
    CostDeltas,
    Deltas,
    FailureDeltas,
    Mode,
    RecordDelta,
    RecordResult,
    UsageTotals,
    sum_usage,
    summarise,
)
from lorelab.evaluation.context._score import FAILURE_CLASSES, FailureCounts
from lorelab.io import loads_strict, read_bounded, sha256_bytes, validate_model


@dataclass(frozen=True, slots=True)
class Baseline:
    """A baseline receipt that passed its checks, with its path and the SHA-256 of its bytes."""

    path: str
    digest: str
    receipt: ContextReceipt


def _identity_contradictions(mode: Mode, record: RecordResult) -> list[str]:
    """How a record's identity fields contradict each other or the receipt's mode."""
    name = f"record {record.record_id!r}"
    problems: list[str] = []
    flags = {
        "synthetic": record.synthetic,
        "provenance.synthetic": record.provenance.synthetic,
        "qualification.synthetic": record.qualification.synthetic,
    }
    if len(set(flags.values())) > 1:
        said = ", ".join(f"{field} {value}" for field, value in flags.items())
        problems.append(f"{name}: its synthetic flags contradict each other ({said})")
    if record.qualification.mode != mode:
        problems.append(
            f"{name}: qualification.mode is {record.qualification.mode} in a {mode}-mode receipt"
        )
    if mode == "fixture":
        if record.record_id != record.fixture_id:
            problems.append(f"{name}: a fixture record's id differs from its fixtureId")
        if record.label is None and record.qualification.scoring != "mechanical":
            problems.append(f"{name}: a fixture record without its label")
        if record.facts_scored != (record.qualification.scoring == "full"):
            problems.append(f"{name}: factsScored contradicts qualification.scoring")
        if record.trial is not None:
            problems.append(f"{name}: a fixture record with trial details")
    else:
        if record.trial is None:
            problems.append(f"{name}: a trial record without trial details")
        elif record.record_id != f"{record.fixture_id}#{record.trial.managed_boundary}" or (
            record.qualification.managed_boundary != record.trial.managed_boundary
        ):
            problems.append(
                f"{name}: its id, fixtureId and managed boundary do not name the same trial"
            )
        if record.label is not None:
            problems.append(f"{name}: a trial record with a label")
        if not record.synthetic:
            problems.append(f"{name}: a trial record not labelled synthetic")
    return problems


def _contradictions(receipt: ContextReceipt) -> list[str]:
    problems: list[str] = []
    if not receipt.records:
        problems.append("it has no records")
    if not receipt.evaluator.module_hashes:
        problems.append("it records no evaluator module hashes")
    ids = [record.record_id for record in receipt.records]
    for duplicate in sorted({key for key in ids if ids.count(key) > 1}):
        problems.append(f"record id {duplicate!r} appears more than once")
    for record in receipt.records:
        name = f"record {record.record_id!r}"
        problems += _identity_contradictions(receipt.mode, record)
        if record.provenance.source_revision is None:
            problems.append(f"{name} has no source provenance (provenance.sourceRevision is null)")
        total = record.failures.total()
        implied = "PASS" if total == 0 else "FAIL"
        if record.verdict != implied:
            problems.append(
                f"{name} says {record.verdict} but its failure counts total {total} ({implied})"
            )
        agrees = None if record.label is None else record.verdict == record.label
        if record.label_agrees != agrees:
            problems.append(
                f"{name}: labelAgrees is {record.label_agrees} but verdict {record.verdict} "
                f"and label {record.label} say {agrees}"
            )
    if receipt.records and summarise(list(receipt.records)) != receipt.summary:
        problems.append("its summary does not match its records")
    any_failure = any(r.verdict == "FAIL" or r.label_agrees is False for r in receipt.records)
    if receipt.exit_code == 0 and any_failure:
        problems.append(
            "it claims exit code 0 although a record failed or disagrees with its label"
        )
    return problems


def load_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline receipt (bounded reader) and refuse it if it cannot be trusted.

    Refused with :class:`SchemaError` (exit 2, nothing is run): a receipt that is not a context
    receipt, one without source provenance, and one whose PASS/FAIL fields contradict its own
    failure counts, labels or summary.
    """
    name = utf8_path(path, "baseline")
    data = read_bounded(name, "fixture")
    receipt = validate_model(ContextReceipt, loads_strict(data, name), f"baseline {name}")
    problems = _contradictions(receipt)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SchemaError(f"baseline {name} refused: {problems[0]}{more}")
    return Baseline(path=name, digest=sha256_bytes(data), receipt=receipt)


def _side(synthetic: bool) -> str:
    return "synthetic" if synthetic else "live (not synthetic)"


def _same_fixture_mismatches(key: str, now: RecordResult, then: RecordResult) -> list[str]:
    """Fields the fixture's bytes determine that differ although the fixture digest is equal.

    The same bytes give the same fixture id, label and source revision, so a
    difference means the baseline does not describe this fixture (edited or mislabelled): its
    outcome cannot stand for this fixture's.
    """
    reasons: list[str] = []
    same_bytes = {
        "fixtureId": (then.fixture_id, now.fixture_id),
        "label": (then.label, now.label),
        "provenance.sourceRevision": (
            then.provenance.source_revision,
            now.provenance.source_revision,
        ),
    }
    if now.qualification.mode == "fixture":
        # A fixture record's provenance is the fixture's own; a trial's run id is its own.
        same_bytes["provenance.runId"] = (then.provenance.run_id, now.provenance.run_id)
    for field, (before, after) in same_bytes.items():
        if before != after:
            reasons.append(
                f"record {key!r}: {field} differs ({before!r} -> {after!r}) although the "
                "fixture digest is the same"
            )
    return reasons


def _reasons(mode: Mode, records: list[RecordResult], baseline: ContextReceipt) -> list[str]:
    reasons: list[str] = []
    if baseline.mode != mode:
        reasons.append(f"the baseline ran in {baseline.mode} mode, this run in {mode} mode")
    current = {r.record_id: r for r in records}
    base = {r.record_id: r for r in baseline.records}
    for key in sorted(base.keys() - current.keys()):
        reasons.append(f"record {key!r} is only in the baseline")
    for key in sorted(current.keys() - base.keys()):
        reasons.append(f"record {key!r} is not in the baseline")
    for key in sorted(current.keys() & base.keys()):
        now, then = current[key], base[key]
        if now.fixture_digest != then.fixture_digest:
            reasons.append(
                f"record {key!r}: fixture changed (sha256 {then.fixture_digest[:12]} -> "
                f"{now.fixture_digest[:12]})"
            )
        else:
            reasons += _same_fixture_mismatches(key, now, then)
        if now.synthetic != then.synthetic:
            # Named on its own: synthetic evidence never stands in for a live run, or back.
            reasons.append(
                f"record {key!r}: synthetic flag differs (the baseline is {_side(then.synthetic)}, "
                f"this run is {_side(now.synthetic)})"
            )
        if now.boundary_kinds != then.boundary_kinds:
            reasons.append(
                f"record {key!r}: boundary kinds differ ({then.boundary_kinds} -> "
                f"{now.boundary_kinds})"
            )
        if now.provenance.model is None or then.provenance.model is None:
            reasons.append(f"record {key!r}: model unknown, so it cannot be shown identical")
        elif now.provenance.model != then.provenance.model:
            reasons.append(
                f"record {key!r}: model differs ({then.provenance.model!r} -> "
                f"{now.provenance.model!r})"
            )
        if now.qualification != then.qualification:
            before = then.qualification.model_dump(by_alias=True)
            after = now.qualification.model_dump(by_alias=True)
            changed = ", ".join(
                f"{field} {before[field]!r} -> {after[field]!r}"
                for field in before
                if before[field] != after[field]
            )
            reasons.append(f"record {key!r}: qualification differs ({changed})")
    return reasons


def _cost(now: Usage | UsageTotals, then: Usage | UsageTotals) -> CostDeltas:
    def delta(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a - b

    # Both sides are finite and non-negative, so their difference is finite.
    cost = (
        None
        if now.cost_usd is None or then.cost_usd is None
        else round(now.cost_usd - then.cost_usd, 10)
    )
    return CostDeltas(
        input_tokens=delta(now.input_tokens, then.input_tokens),
        output_tokens=delta(now.output_tokens, then.output_tokens),
        costUSD=cost,
        wall_ms=delta(now.wall_ms, then.wall_ms),
    )


def _failure_deltas(now: FailureCounts, then: FailureCounts) -> FailureDeltas:
    a, b = now.as_dict(), then.as_dict()
    return FailureDeltas.model_validate({name: a[name] - b[name] for name in FAILURE_CLASSES})


def compare(mode: Mode, records: list[RecordResult], baseline: Baseline) -> Comparison:
    """Compare this run's records with a checked baseline; deltas only when comparable."""
    reasons = _reasons(mode, records, baseline.receipt)
    if reasons:
        return Comparison(
            baseline_path=baseline.path,
            baseline_sha256=baseline.digest,
            comparable=False,
            reasons=reasons,
            deltas=None,
        )
    base = {r.record_id: r for r in baseline.receipt.records}
    per_record = [
        RecordDelta(
            record_id=record.record_id,
            passes=int(record.verdict == "PASS") - int(base[record.record_id].verdict == "PASS"),
            failures=_failure_deltas(record.failures, base[record.record_id].failures),
            cost=_cost(record.usage, base[record.record_id].usage),
        )
        for record in records
    ]
    now, then = summarise(records), baseline.receipt.summary
    deltas = Deltas(
        passes=now.passes - then.passes,
        failures=_failure_deltas(now.failure_totals, then.failure_totals),
        cost=_cost(
            sum_usage([r.usage for r in records]),
            sum_usage([r.usage for r in baseline.receipt.records]),
        ),
        records=per_record,
    )
    return Comparison(
        baseline_path=baseline.path,
        baseline_sha256=baseline.digest,
        comparable=True,
        reasons=[],
        deltas=deltas,
    )
