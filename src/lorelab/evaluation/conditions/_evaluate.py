"""``lorelab eval conditions decide``: per-condition figures, the paired comparison with
baseline on the holdouts, the dreaming decision, Skills to review, and what the protocol
cannot prove."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from lorelab._model import PROTOCOL_FIXTURE
from lorelab.errors import InvalidInput, SchemaError, UsageError
from lorelab.evaluation.conditions._manifest import (
    CONDITIONS,
    MEMORY_CONDITIONS,
    MIN_HOLDOUTS,
    MIN_TASKS,
    ConditionsManifest,
    Thresholds,
    load_manifest,
)
from lorelab.evaluation.conditions._report import (
    CANNOT_PROVE,
    DECIDED_CONDITION,
    FIXTURE_STATEMENT,
    MEMCODER_CONDITIONS,
    ConditionsReport,
    ConditionSummary,
    Decision,
    FlaggedRun,
    HoldoutSource,
    PairedComparison,
    ReviewRequired,
    ReworkSource,
    SignTestResult,
    TaskPair,
    TokenCost,
    Verdict,
)
from lorelab.evaluation.conditions._runs import LoadedRuns, RunRecord, read_runs
from lorelab.evaluation.stats import min_units_for_significance, power_note, sign_test
from lorelab.io import SCRIPT_HASH_CAP, sha256_file

_SHOWN_RUNS: Final = 8


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _served(run: RunRecord) -> bool:
    # Unknown token counts are treated as served: an unknown cannot clear a pollution check.
    return run.guidance_tokens is None or run.guidance_tokens > 0


def is_polluted(run: RunRecord) -> bool:
    """Served guidance that was irrelevant, or that held unchecked items or a holdout's own
    past solution."""
    return (
        (_served(run) and run.retrieval_relevant is False)
        or bool(run.unchecked_items_served)
        or bool(run.own_solutions_served)
    )


def _difference(baseline: RunRecord, other: RunRecord) -> int:
    if other.passed != baseline.passed:
        return 1 if other.passed else -1
    if not other.passed:
        # Both failed: fewer attempts at a failure (or none, after a host or memory failure)
        # is no improvement.
        return 0
    if other.rework_count is None or baseline.rework_count is None:
        # Both passed, but a rework count is unknown: which needed less cannot be said.
        return 0
    if other.rework_count != baseline.rework_count:
        return 1 if other.rework_count < baseline.rework_count else -1
    return 0


def resolve_holdouts(
    runs: LoadedRuns, manifest: ConditionsManifest | None, given: Sequence[str] | None = None
) -> tuple[list[str], HoldoutSource]:
    """The holdout tasks: the manifest's, else ``given`` (``--holdouts``), else the runs'
    ``holdout`` field, else every task (and the decision is insufficient)."""
    flags: dict[str, set[bool]] = defaultdict(set)
    stated = [run for run in runs.runs if run.holdout is not None]
    for run in stated:
        flags[run.task_id].add(bool(run.holdout))
    conflicting = sorted(task for task, values in flags.items() if len(values) > 1)
    if conflicting:
        raise SchemaError(
            f"{runs.source}: runs of one task disagree on holdout: {', '.join(conflicting)}"
        )
    if manifest is not None:
        holdouts = manifest.holdout_ids()
        wrong = sorted(task for task, values in flags.items() if values != {task in holdouts})
        if wrong:
            raise SchemaError(
                f"{runs.source}: holdout flags disagree with the manifest for: {', '.join(wrong)}"
            )
        return holdouts, "manifest"
    if given is not None:
        chosen = list(dict.fromkeys(given))
        known = set(runs.task_ids())
        unknown = [task for task in chosen if task not in known]
        if unknown:
            raise SchemaError(
                f"{runs.source}: --holdouts names tasks without runs: {', '.join(unknown)}"
            )
        wrong = sorted(task for task, values in flags.items() if values != {task in chosen})
        if wrong:
            raise SchemaError(
                f"{runs.source}: holdout flags disagree with --holdouts for: {', '.join(wrong)}"
            )
        return chosen, "option"
    if not stated:
        return runs.task_ids(), "all-tasks"
    if len(stated) != len(runs.runs):
        unstated = sorted({run.task_id for run in runs.runs if run.holdout is None})
        raise SchemaError(
            f"{runs.source}: some runs state holdout and others do not (missing for: "
            f"{', '.join(unstated)}); state it on every run or on none"
        )
    holdouts = [task for task in runs.task_ids() if flags[task] == {True}]
    if not holdouts:
        raise SchemaError(f"{runs.source}: no run is marked holdout; nothing can be paired")
    return holdouts, "runs"


def _summary(condition: str, every: list[RunRecord]) -> ConditionSummary:
    runs = [run for run in every if not run.left_out()]
    relevance = [run.retrieval_relevant for run in runs if run.retrieval_relevant is not None]
    tokens = [run.guidance_tokens for run in runs if run.guidance_tokens is not None]
    rework = [run.rework_count for run in runs if run.rework_count is not None]
    passed = sum(run.passed for run in runs)
    return ConditionSummary(
        condition=condition,
        runs=len(every),
        memory_failures=sum(1 for run in every if run.memory_failure() is not None),
        executor_failures=sum(1 for run in every if run.executor_failure()),
        passed=passed,
        pass_rate=_mean([1.0 if run.passed else 0.0 for run in runs]),
        mean_rework=_mean([float(count) for count in rework]),
        rework_known=len(rework),
        retrieval_relevance_rate=_mean([1.0 if value else 0.0 for value in relevance]),
        relevance_known=len(relevance),
        mean_guidance_tokens=_mean([float(t) for t in tokens]),
        guidance_tokens_known=len(tokens),
    )


def _delta(other: float | None, base: float | None) -> float | None:
    return None if other is None or base is None else other - base


def _known_rework(pairs: list[tuple[RunRecord, RunRecord]]) -> list[tuple[int, int]]:
    """(baseline, condition) rework of the pairs where both runs state it."""
    return [
        (b.rework_count, o.rework_count)
        for b, o in pairs
        if b.rework_count is not None and o.rework_count is not None
    ]


def _paired(runs: LoadedRuns, condition: str, holdouts: list[str]) -> PairedComparison:
    every = [(runs.get(task, "baseline"), runs.get(task, condition)) for task in holdouts]
    # A run whose memory call failed measured the harness, not the memory: it is left out.
    # A run whose worker died has no outcome: it is left out too, never counted either way.
    pairs = [(b, o) for b, o in every if not b.left_out() and not o.left_out()]
    lost = [o.task_id for b, o in every if b.executor_failure() or o.executor_failure()]
    left_out = [
        o.task_id
        for b, o in every
        if b.memory_failure() is not None or o.memory_failure() is not None
    ]
    tasks = [
        TaskPair(
            task_id=other.task_id,
            baseline_passed=base.passed,
            condition_passed=other.passed,
            baseline_rework=base.rework_count,
            condition_rework=other.rework_count,
            difference=_difference(base, other),
            polluted=is_polluted(other),
            retrieval_relevant=other.retrieval_relevant,
        )
        for base, other in pairs
    ]
    base_pass = _mean([1.0 if b.passed else 0.0 for b, _ in pairs])
    other_pass = _mean([1.0 if o.passed else 0.0 for _, o in pairs])
    # Rework is compared over the pairs whose runs both state it (unknown is never 0).
    known = _known_rework(pairs)
    base_rework = _mean([float(b) for b, _ in known])
    other_rework = _mean([float(o) for _, o in known])
    both = _known_rework([(b, o) for b, o in pairs if b.passed and o.passed])
    both_delta = sum(o - b for b, o in both) / len(both) if both else None
    tokens = [o.guidance_tokens for _, o in pairs if o.guidance_tokens is not None]
    base_tokens = [b.guidance_tokens for b, _ in pairs if b.guidance_tokens is not None]
    test = sign_test(pair.difference for pair in tasks)
    return PairedComparison(
        condition=condition,
        holdouts=len(pairs),
        memory_failures=left_out,
        executor_failures=lost,
        baseline_pass_rate=base_pass,
        condition_pass_rate=other_pass,
        pass_rate_delta=_delta(other_pass, base_pass),
        baseline_mean_rework=base_rework,
        condition_mean_rework=other_rework,
        rework_delta=_delta(other_rework, base_rework),
        rework_delta_both_passed=both_delta,
        rework_known=len(known),
        negative_transfer=[o.task_id for b, o in pairs if b.passed and not o.passed],
        pollution_rate=_mean([1.0 if pair.polluted else 0.0 for pair in tasks]),
        polluted=[pair.task_id for pair in tasks if pair.polluted],
        irrelevance_rate=_mean([1.0 if o.retrieval_relevant is False else 0.0 for _, o in pairs]),
        token_cost=TokenCost(
            mean_guidance_tokens=_mean([float(t) for t in tokens]),
            total_guidance_tokens=sum(tokens) if tokens else None,
            known=len(tokens),
            baseline_mean_guidance_tokens=_mean([float(t) for t in base_tokens]),
        ),
        sign_test=SignTestResult(
            positive=test.positive, negative=test.negative, ties=test.ties, p_value=test.p_value
        ),
        tasks=tasks,
    )


def decide(
    paired: PairedComparison,
    thresholds: Thresholds,
    source: Literal["manifest", "defaults"],
    *,
    unknown: Sequence[str] = (),
    untrusted: Sequence[str] = (),
    invalid: Sequence[str] = (),
    insufficient: Sequence[str] = (),
) -> Decision:
    """Apply the documented decision rule to one paired comparison.

    ``invalid`` names why the runs cannot be evidence at all (a memory call failed): the
    verdict is ``invalid`` whatever the figures say. ``insufficient`` names the protocol's
    minimums the runs do not reach: the verdict is ``insufficient``.

    ``do-not-advance`` when a declared threshold is crossed, when the condition is
    significantly worse, or when no holdout improved although the sample could have shown it;
    ``advance`` when it improved pass rate or rework and the sign test is significant with
    every threshold met; ``inconclusive`` otherwise. ``unknown`` names what the decision
    needs and does not have (the declared thresholds): any verdict becomes
    ``inconclusive``. ``untrusted`` names flagged holdout runs: ``advance`` becomes
    ``inconclusive``.
    """
    stops: tuple[tuple[Verdict, Sequence[str]], ...] = (
        ("invalid", invalid),
        ("insufficient", insufficient),
    )
    for verdict, reasons in stops:
        if reasons:
            return Decision(
                condition=paired.condition,
                verdict=verdict,
                reasons=list(reasons),
                thresholds=thresholds,
                thresholds_source=source,
            )
    found = _rule(paired, thresholds, source)
    if unknown:
        return found.model_copy(
            update={
                "verdict": "inconclusive",
                "reasons": [*unknown, f"without it the rule would say {found.verdict}"],
            }
        )
    if found.verdict == "advance" and untrusted:
        return found.model_copy(
            update={
                "verdict": "inconclusive",
                "reasons": [
                    found.reasons[0],
                    "flagged holdout runs are no clean measurement: " + "; ".join(untrusted),
                ],
            }
        )
    return found


def _rule(
    paired: PairedComparison, thresholds: Thresholds, source: Literal["manifest", "defaults"]
) -> Decision:
    t = thresholds

    def verdict(value: Verdict, reasons: list[str]) -> Decision:
        return Decision(
            condition=paired.condition,
            verdict=value,
            reasons=reasons,
            thresholds=t,
            thresholds_source=source,
        )

    pass_delta, rework_delta = paired.pass_rate_delta, paired.rework_delta
    pollution, irrelevance = paired.pollution_rate, paired.irrelevance_rate
    if pass_delta is None or pollution is None or irrelevance is None:
        return verdict("invalid", ["no holdout task could be paired with baseline"])
    violations: list[str] = []
    if len(paired.negative_transfer) > t.max_negative_transfer:
        violations.append(
            f"negative transfer on {len(paired.negative_transfer)} holdout task(s) "
            f"({', '.join(paired.negative_transfer)}) exceeds {t.max_negative_transfer}"
        )
    if pollution > t.max_pollution_rate:
        violations.append(f"memory pollution rate {pollution:.3f} exceeds {t.max_pollution_rate}")
    if irrelevance > t.max_irrelevance_rate:
        violations.append(f"irrelevance rate {irrelevance:.3f} exceeds {t.max_irrelevance_rate}")
    mean_tokens = paired.token_cost.mean_guidance_tokens
    if mean_tokens is not None and mean_tokens > t.max_mean_guidance_tokens:
        violations.append(
            f"mean guidance tokens {mean_tokens:.1f} exceed {t.max_mean_guidance_tokens}"
        )

    if violations:
        return verdict("do-not-advance", violations)
    test = paired.sign_test
    significant = test.p_value < t.alpha
    needed = min_units_for_significance(t.alpha)
    # Rework counts only where both runs passed: a failed run that gave up sooner (or never
    # ran, after a host or memory failure) must not look like an improvement.
    both = paired.rework_delta_both_passed
    improved = pass_delta > 0 or (both is not None and both < 0)
    both_text = "n/a" if both is None else f"{both:+.3f}"
    rework_text = "unknown" if rework_delta is None else f"{rework_delta:+.3f}"
    summary = (
        f"pass-rate delta {pass_delta:+.3f}, rework delta "
        f"{rework_text} (where both passed: {both_text}), sign test "
        f"+{test.positive}/-{test.negative}/={test.ties}, p = {test.p_value:.4g}"
    )
    if improved:
        if mean_tokens is None:
            return verdict(
                "inconclusive", [summary, "token cost is unknown, so its threshold cannot be met"]
            )
        if test.positive > test.negative and significant:
            return verdict("advance", [summary, "every declared threshold is met"])
        return verdict(
            "inconclusive", [summary, f"the improvement is not significant at alpha {t.alpha}"]
        )
    if test.negative > test.positive and significant:
        return verdict("do-not-advance", [summary, "significantly worse than baseline"])
    if test.positive == 0 and paired.holdouts >= needed:
        return verdict(
            "do-not-advance",
            [summary, f"no holdout improved across {paired.holdouts} holdout tasks"],
        )
    return verdict(
        "inconclusive",
        [summary, f"no improvement, and {paired.holdouts} holdout tasks cannot show its absence"],
    )


def _review_required(runs: LoadedRuns, failures: int) -> list[ReviewRequired]:
    by_skill: dict[str, list[RunRecord]] = defaultdict(list)
    for run in runs.runs:
        # A run that failed at the host or memory never tested the Skill: it is left out.
        if not run.host_failure and run.memory_failure() is None:
            for skill_id in run.used_skills():
                by_skill[skill_id].append(run)
    flagged = []
    for skill_id in sorted(by_skill):
        skill_runs = by_skill[skill_id]
        failed = [run for run in skill_runs if not run.passed]
        if len(failed) >= failures:
            flagged.append(
                ReviewRequired(
                    skill_id=skill_id,
                    failed_runs=len(failed),
                    runs=len(skill_runs),
                    failed_tasks=sorted({run.task_id for run in failed}),
                )
            )
    return flagged


def _flagged(runs: LoadedRuns, holdouts: list[str]) -> list[FlaggedRun]:
    return [
        FlaggedRun(
            task_id=run.task_id,
            condition=run.condition,
            holdout=run.task_id in holdouts,
            flags=flags,
        )
        for run in runs.runs
        if (flags := run.integrity_flags())
    ]


def _memory_failures(runs: LoadedRuns) -> list[str]:
    """Why the runs are no evidence: how many runs could not call the memory, and which calls."""
    failed = [(run, calls) for run in runs.runs if (calls := run.memory_failure()) is not None]
    if not failed:
        return []
    counts = Counter(call for _, calls in failed for call in calls)
    listed = ", ".join(f"{call} ({count} run(s))" for call, count in sorted(counts.items()))
    shown = ", ".join(f"{run.task_id} x {run.condition}" for run, _ in failed[:_SHOWN_RUNS])
    more = f" and {len(failed) - _SHOWN_RUNS} more" if len(failed) > _SHOWN_RUNS else ""
    return [
        f"{len(failed)} of {len(runs.runs)} runs could not call the memory; failed calls: {listed}",
        f"runs: {shown}{more}",
        "a failure of the memory's interface is no evidence for or against the memory: these "
        "runs are left out of every comparison, and no decision is made",
    ]


def _insufficient(runs: LoadedRuns, holdouts: list[str], source: HoldoutSource) -> list[str]:
    """What a decision needs and the runs do not give (checked when no manifest vouches): the
    holdouts, or the protocol's minimum numbers of tasks and holdouts."""
    tasks = len(runs.task_ids())
    short = []
    if source == "all-tasks":
        short.append(
            "the holdouts are not known (no --manifest, no --holdouts and no holdout field on "
            "the runs), so every task, seeds included, was paired as a holdout"
        )
    if tasks < MIN_TASKS:
        short.append(f"{tasks} task(s); the protocol needs at least {MIN_TASKS}")
    if source != "all-tasks" and len(holdouts) < MIN_HOLDOUTS:
        short.append(f"{len(holdouts)} holdout task(s); the protocol needs at least {MIN_HOLDOUTS}")
    if source == "all-tasks":
        short.append("give the holdouts (--holdouts ID,... or --manifest) to decide")
    return short


def rework_source(runs: LoadedRuns) -> ReworkSource:
    """What the runs' ``rework_count`` counts: the host's reported cycles (lorelab's runner
    now), lorelab's re-prompts (a lorelab runs file written before hosts reported cycles: it
    has ``host_calls`` and no ``reprompt_count``), or whatever the file's writer counted."""
    if any(run.reprompt_count is not None for run in runs.runs):
        return "host-cycles"
    if any("host_calls" in (run.model_extra or {}) for run in runs.runs):
        return "reprompts"
    return "as-written"


def _incomplete(runs: LoadedRuns) -> list[str]:
    """Why the decided condition cannot be decided at all: the runs file has no run of it."""
    if not runs.dreaming_missing:
        return []
    return [
        "the runs file has no dreaming runs: only baseline, memory_guided and skill_planned are "
        "reported (the three conditions MemCoder's evaluate summarizes); dreaming cannot be "
        "decided"
    ]


@dataclass(frozen=True, slots=True)
class _Basis:
    """What the decision rests on besides the paired figures."""

    thresholds: Thresholds
    source: Literal["manifest", "defaults"]
    unknown: list[str]
    untrusted: list[str]
    invalid: list[str]
    incomplete: list[str]
    insufficient: list[str]


def _decision(paired: list[PairedComparison], basis: _Basis) -> Decision:
    """The decision: invalid, then incomplete (no dreaming runs: nothing to pair), else the
    rule applied to the dreaming comparison."""
    incomplete = [*basis.incomplete, *basis.insufficient] if basis.incomplete else []
    stops: tuple[tuple[Verdict, list[str]], ...] = (
        ("invalid", basis.invalid),
        ("incomplete", incomplete),
    )
    for verdict, reasons in stops:
        if reasons:
            return Decision(
                condition=DECIDED_CONDITION,
                verdict=verdict,
                reasons=reasons,
                thresholds=basis.thresholds,
                thresholds_source=basis.source,
            )
    decided = next(p for p in paired if p.condition == DECIDED_CONDITION)
    return decide(
        decided,
        basis.thresholds,
        basis.source,
        unknown=basis.unknown,
        untrusted=basis.untrusted,
        invalid=basis.invalid,
        insufficient=basis.insufficient,
    )


def evaluate(
    runs: LoadedRuns,
    manifest: ConditionsManifest | None = None,
    *,
    manifest_checked: bool = False,
    holdouts_given: Sequence[str] | None = None,
) -> ConditionsReport:
    """The full report for checked runs, optionally bound to the manifest they came from.

    Without known holdouts (no manifest, no ``holdouts_given``, no holdout field) the decision
    is ``insufficient``; a runs file without dreaming runs is reported on the three other
    conditions and decided ``incomplete``."""
    holdouts, holdout_source = resolve_holdouts(runs, manifest, holdouts_given)
    thresholds = manifest.thresholds if manifest is not None else Thresholds()
    by_condition: dict[str, list[RunRecord]] = defaultdict(list)
    for run in runs.runs:
        by_condition[run.condition].append(run)
    present = [c for c in MEMORY_CONDITIONS if c in by_condition]
    paired = [_paired(runs, condition, holdouts) for condition in present]
    flagged = _flagged(runs, holdouts)
    unknown: list[str] = []
    if manifest is None and runs.manifest_sha256 is not None:
        unknown.append(
            f"the runs were made under manifest sha256 {runs.manifest_sha256}, whose declared "
            "thresholds were not given (--manifest); defaults are not the declared thresholds"
        )
    basis = _Basis(
        thresholds=thresholds,
        source="manifest" if manifest is not None else "defaults",
        unknown=unknown,
        untrusted=[
            f"{flag.task_id} x {flag.condition} ({', '.join(flag.flags)})"
            for flag in flagged
            if flag.holdout and flag.condition in ("baseline", DECIDED_CONDITION)
        ],
        invalid=_memory_failures(runs),
        incomplete=_incomplete(runs),
        insufficient=_insufficient(runs, holdouts, holdout_source) if manifest is None else [],
    )
    fixture = any(run.evidence_kind == PROTOCOL_FIXTURE for run in runs.runs)
    cannot_prove = list(CANNOT_PROVE)
    if fixture:
        cannot_prove.append(FIXTURE_STATEMENT)
    reported = MEMCODER_CONDITIONS if runs.dreaming_missing else CONDITIONS
    return ConditionsReport(
        input_sha256=runs.sha256,
        evidence_kind=PROTOCOL_FIXTURE if fixture else None,
        tasks=len(runs.task_ids()),
        runs=len(runs.runs),
        holdout_source=holdout_source,
        holdouts=holdouts,
        manifest_sha256=runs.manifest_sha256,
        manifest_checked=manifest_checked,
        rework_source=rework_source(runs),
        conditions=[_summary(c, by_condition[c]) for c in reported],
        paired=paired,
        flagged_runs=flagged,
        decision=_decision(paired, basis),
        review_required=_review_required(runs, thresholds.review_required_failures),
        power_note=power_note(len(holdouts), thresholds.alpha, unit_name="holdout task"),
        cannot_prove=cannot_prove,
    )


def evaluate_file(
    path: str | os.PathLike[str],
    manifest_path: str | os.PathLike[str] | None = None,
    holdouts: Sequence[str] | None = None,
) -> ConditionsReport:
    """Read a runs file (and optionally its manifest, or the holdout task ids) and report on it.

    When the runs file records the SHA-256 of the manifest it was made under, a ``--manifest``
    with other bytes is refused: thresholds and holdouts are declared before the run."""
    if manifest_path is not None and holdouts is not None:
        raise UsageError("give --holdouts or --manifest, not both: the manifest declares them")
    manifest = load_manifest(manifest_path) if manifest_path is not None else None
    expected = [task.id for task in manifest.tasks] if manifest is not None else None
    runs = read_runs(path, expected_tasks=expected)
    checked = False
    if manifest_path is not None and runs.manifest_sha256 is not None:
        given = sha256_file(manifest_path, cap=SCRIPT_HASH_CAP)
        if given != runs.manifest_sha256:
            raise InvalidInput(
                f"{manifest_path}: its SHA-256 {given} is not the manifest the runs were made "
                f"under ({runs.manifest_sha256}, recorded in {path}); thresholds and holdouts "
                "cannot change after the run"
            )
        checked = True
    return evaluate(runs, manifest, manifest_checked=checked, holdouts_given=holdouts)
