"""The summary of a learning run: arm totals, the paired sign test over specifications, and a
label that refuses to over-claim."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction
from statistics import median
from typing import Any

from lorelab._model import PROTOCOL_FIXTURE, EvidenceKind
from lorelab.evaluation.learning.manifest import LearningManifest
from lorelab.evaluation.learning.records import (
    ARMS,
    BYTE_ACCOUNTING,
    ArmSummary,
    ControlArm,
    ControllerRecord,
    EffectSize,
    Label,
    ManifestReceipt,
    Paired,
    Settings,
    SpecPair,
    Summary,
    TrialRecord,
    run_arms,
)
from lorelab.evaluation.stats import (
    BOOTSTRAP_RESAMPLES,
    DEFAULT_ALPHA,
    SignTest,
    mean_difference_interval,
    min_units_for_significance,
    power_note,
    sign_test,
)

MIN_LABEL_REPETITIONS = 3


def _sum_and_median(values: Sequence[int | None]) -> tuple[int | None, float | None]:
    """Sum and median of the values a trial recorded (null: none did)."""
    known = [value for value in values if value is not None]
    if not known:
        return None, None
    return sum(known), float(median(known))


def _stable(trial: TrialRecord) -> bool:
    """The generated tests were run for stability and held on the baseline and every defect."""
    baseline = trial.validation.stability if trial.validation else None
    return (
        baseline is not None
        and baseline.stable
        and all(defect.stability.stable for defect in trial.defects)
    )


def _arm(records: Sequence[TrialRecord]) -> ArmSummary:
    receipts = [r for t in records if t.generation for r in t.generation.roles]
    defects = sum(t.defects_total for t in records)
    detected = sum(t.detected for t in records)
    calls = 3 * len(records)
    costs = [r.usage.cost_usd if r.usage else None for r in receipts]
    billing = (
        sum(c for c in costs if c is not None)
        if receipts and len(receipts) == calls and all(c is not None for c in costs)
        else None
    )
    setup, setup_median = _sum_and_median([t.setup_ms for t in records])
    retrieval, retrieval_median = _sum_and_median([t.retrieval_ms for t in records])
    total, total_median = _sum_and_median([t.total_ms for t in records])
    reporting = sum(1 for t in records if t.lesson_seed is not None)
    return ArmSummary(
        trials=len(records),
        qualified_trials=sum(1 for t in records if t.status == "qualified"),
        defects=defects,
        detected=detected,
        defect_recall=detected / defects if defects else None,
        passing_cases=sum(t.passing_cases for t in records),
        generation_ms=sum(t.generation_ms or 0 for t in records),
        input_bytes=sum(r.input_bytes for r in receipts),
        output_bytes=sum(r.output_bytes or 0 for r in receipts),
        calls=calls,
        attempted_calls=len(receipts),
        spawned_calls=sum(1 for r in receipts if r.spawned),
        billing_usd=billing,
        setup_ms=setup,
        setup_ms_median=setup_median,
        retrieval_ms=retrieval,
        retrieval_ms_median=retrieval_median,
        total_ms=total,
        total_ms_median=total_median,
        stable_trials=sum(1 for t in records if _stable(t)),
        unstable_trials=sum(1 for t in records if t.status == "unstable"),
        # No trial's author reported lesson use: unknown, never "no trial used a lesson".
        trials_with_lesson_used=sum(1 for t in records if t.lesson_seed and t.lesson_seed.kept)
        if reporting
        else None,
        trials_reporting_lesson_use=reporting,
    )


def _mean_recall(records: Sequence[TrialRecord]) -> Fraction:
    """Mean recall as an exact fraction, so equal totals in any order compare as equal."""
    if not records:
        return Fraction(0)
    total = sum(
        (
            Fraction(t.detected, t.defects_total) if t.defects_total else Fraction(0)
            for t in records
        ),
        Fraction(0),
    )
    return total / len(records)


def _fixture_roles_note(roles: Sequence[str]) -> str:
    return f" (the protocol fixture plays the {', '.join(roles)} role)" if roles else ""


def label_rule(
    kind: EvidenceKind,
    *,
    declared_fixture: bool,
    frozen_lessons: int,
    specifications: int,
    repetitions: int,
    complete: bool,
    test: SignTest,
    fixture_roles: Sequence[str] = (),
) -> tuple[Label, str]:
    """The label a run supports, and why: the one rule every summary (and every simulation of
    the label's error rates) applies."""
    needed = min_units_for_significance(DEFAULT_ALPHA)
    if kind == PROTOCOL_FIXTURE:
        return (
            "not-evidence",
            "a protocol-fixture run exercises the protocol; it is never evidence about memory"
            + _fixture_roles_note(fixture_roles)
            + ("" if declared_fixture else " (a worker response declared protocol-fixture)"),
        )
    if frozen_lessons == 0:
        return (
            "inconclusive",
            "the frozen memory holds no lesson (no history item validated): both arms got the "
            "same treatment",
        )
    if specifications < needed:
        return "inconclusive", f"{specifications} specifications; at least {needed} are needed"
    if repetitions < MIN_LABEL_REPETITIONS:
        return (
            "inconclusive",
            f"{repetitions} repetitions; at least {MIN_LABEL_REPETITIONS} are needed",
        )
    if not complete:
        return "inconclusive", "not every trial completed"
    if test.p_value >= DEFAULT_ALPHA:
        return "inconclusive", f"sign test p = {test.p_value:.4g} is not below {DEFAULT_ALPHA}"
    if test.positive > test.negative:
        return "positive", f"memory better on {test.positive} of {specifications} specifications"
    return "negative", f"memory worse on {test.negative} of {specifications} specifications"


def build_summary(
    manifest: LearningManifest,
    manifest_sha256: str,
    evidence_kind: EvidenceKind,
    settings: Settings,
    records: Sequence[TrialRecord],
    *,
    frozen_lessons: int,
    executor: dict[str, Any] | None = None,
    concurrent: bool = False,
    controller: ControllerRecord | None = None,
    manifest_receipt: ManifestReceipt | None = None,
    receipt_hashes: dict[str, str] | None = None,
) -> Summary:
    """Summarise ``records``; every trial counts, rejected and failed ones as zero.

    ``concurrent``: the trials ran side by side, so time comparisons are ``confounded``.
    ``manifest_receipt``: ``manifest.json``, whose worker identity, verification scope and
    implementation hashes the summary repeats (one source).
    ``receipt_hashes``: the SHA-256 of every receipt written before the summary."""
    claimed_fixture = any(
        r.evidence_kind == PROTOCOL_FIXTURE
        for t in records
        if t.generation
        for r in t.generation.roles
    )
    pairs = settings.roles.pairs() if settings.roles is not None else []
    fixture_roles = [role for role, worker in pairs if worker.kind == PROTOCOL_FIXTURE]
    kind: EvidenceKind = PROTOCOL_FIXTURE if claimed_fixture or fixture_roles else evidence_kind
    arms: dict[str, ArmSummary] = {
        arm: _arm([t for t in records if t.arm == arm]) for arm in run_arms(settings.control)
    }
    controls: list[ControlArm] = ["no-memory", "placebo"] if "placebo" in arms else ["no-memory"]
    comparisons = [
        compare_arms(
            [fixture.id for fixture in manifest.fixtures],
            records,
            kind=kind,
            declared_fixture=evidence_kind == PROTOCOL_FIXTURE,
            frozen_lessons=frozen_lessons,
            repetitions=settings.repeat,
            fixture_roles=fixture_roles,
            control=control,
        )
        for control in controls
    ]
    paired = comparisons[0]
    return Summary(
        evidence_kind=kind,
        roles=settings.roles,
        fixture_roles=fixture_roles,
        manifest_sha256=manifest_sha256,
        arms=arms,
        frozen_lessons=frozen_lessons,
        paired=paired,
        paired_placebo=comparisons[1] if len(comparisons) > 1 else None,
        power_note=power_note(len(paired.specs), DEFAULT_ALPHA),
        byte_accounting=BYTE_ACCOUNTING,
        time_comparisons="confounded" if concurrent else "sequential",
        executor=executor or {"kind": "sequential", "jobs": 1},
        controller=controller,
        worker_identity=manifest_receipt.worker_identity if manifest_receipt else None,
        verification_scope=manifest_receipt.verification_scope if manifest_receipt else None,
        implementation_hashes=manifest_receipt.implementation_hashes if manifest_receipt else None,
        receipt_hashes=receipt_hashes,
    )


def compare_arms(
    specifications: Sequence[str],
    records: Sequence[TrialRecord],
    *,
    kind: EvidenceKind,
    declared_fixture: bool,
    frozen_lessons: int,
    repetitions: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
    fixture_roles: Sequence[str] = (),
    control: ControlArm = "no-memory",
) -> Paired:
    """The paired comparison over ``specifications``: per-specification mean recall per arm,
    the sign test over their differences (memory minus ``control``), the label, and the
    effect size next to it.

    ``resamples`` sets the bootstrap of the effect interval only; the label never reads it.
    """
    cells: dict[tuple[str, str], list[TrialRecord]] = defaultdict(list)
    for trial in records:
        cells[(trial.specification, trial.arm)].append(trial)
    pairs = []
    exact = []
    placebo = any(trial.arm == "placebo" for trial in records)
    for specification in specifications:
        memory, plain = (_mean_recall(cells[(specification, arm)]) for arm in ARMS)
        sham = _mean_recall(cells[(specification, "placebo")])
        other = sham if control == "placebo" else plain
        exact.append(memory - other)
        pairs.append(
            SpecPair(
                specification=specification,
                memory_recall=float(memory),
                no_memory_recall=float(plain),
                difference=float(memory - other),
                placebo_recall=float(sham) if placebo else None,
            )
        )
    test = sign_test([float(difference) for difference in exact])
    label, why = label_rule(
        kind,
        declared_fixture=declared_fixture,
        frozen_lessons=frozen_lessons,
        specifications=len(pairs),
        repetitions=repetitions,
        complete=all(t.complete for t in records),
        test=test,
        fixture_roles=fixture_roles,
    )
    interval = mean_difference_interval(
        [float(difference) for difference in exact], resamples=resamples
    )
    return Paired(
        control=control,
        specs=pairs,
        sign_test=test.as_json(),
        alpha=DEFAULT_ALPHA,
        label=label,
        label_reason=why,
        effect=EffectSize(
            mean_difference=interval.mean,
            ci95_low=interval.low,
            ci95_high=interval.high,
            method=(
                f"percentile bootstrap over specifications, {interval.resamples} resamples, "
                f"seed {interval.seed}"
            ),
            resamples=interval.resamples,
            seed=interval.seed,
        ),
    )


def _effect_line(effect: EffectSize) -> str:
    if effect.mean_difference is None or effect.ci95_low is None or effect.ci95_high is None:
        return "Effect size: no specifications, so none."
    return (
        f"Effect size: mean per-specification recall difference {effect.mean_difference:+.3f}, "
        f"95% interval [{effect.ci95_low:+.3f}, {effect.ci95_high:+.3f}] ({effect.method}); "
        "it never changes the label."
    )


def _time_line(summary: Summary) -> str:
    if summary.time_comparisons == "confounded":
        return (
            f"- time comparisons: **confounded** (trials ran side by side on "
            f"{summary.executor.get('kind')}; generation times are not comparable between "
            "arms; recall figures stand)"
        )
    return "- time comparisons: sequential (one trial at a time)"


def summary_markdown(summary: Summary) -> str:
    """A readable rendering of ``summary`` for ``summary.md``."""
    lines = [
        "# Learning evaluation summary",
        "",
        f"- evidence kind: **{summary.evidence_kind}**"
        + _fixture_roles_note(summary.fixture_roles or []),
        "- roles: "
        + (
            "; ".join(
                f"{role} `{' '.join(worker.argv)}` ({worker.kind})"
                for role, worker in summary.roles.pairs()
            )
            if summary.roles is not None
            else "not recorded"
        ),
        f"- label: **{summary.paired.label}** ({summary.paired.label_reason})",
        f"- manifest SHA-256: `{summary.manifest_sha256}`",
        f"- lessons in the frozen memory: {summary.frozen_lessons}",
        _time_line(summary),
        "",
        "| arm | trials | qualified | defects | detected | recall | passing cases | calls "
        "(attempted/spawned) | input bytes | output bytes | billing USD |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, data in summary.arms.items():
        recall = "n/a" if data.defect_recall is None else f"{data.defect_recall:.3f}"
        billing = "unknown" if data.billing_usd is None else f"{data.billing_usd:.4f}"
        lines.append(
            f"| {arm} | {data.trials} | {data.qualified_trials} | {data.defects} | "
            f"{data.detected} | {recall} | {data.passing_cases} | {data.calls} "
            f"({data.attempted_calls}/{data.spawned_calls}) | {data.input_bytes} | "
            f"{data.output_bytes} | {billing} |"
        )
    test = summary.paired.sign_test
    lines += [
        "",
        "| specification | memory recall | no-memory recall | difference |",
        "|---|---|---|---|",
    ]
    for pair in summary.paired.specs:
        lines.append(
            f"| {pair.specification} | {pair.memory_recall:.3f} | "
            f"{pair.no_memory_recall:.3f} | {pair.difference:+.3f} |"
        )
    lines += [
        "",
        f"Sign test (exact, two-sided, ties excluded): {test['positive']} positive, "
        f"{test['negative']} negative, {test['ties']} ties, p = {test['pValue']:.4g}.",
        "",
        _effect_line(summary.paired.effect),
        "",
        summary.power_note,
        "",
    ]
    return "\n".join(lines)
