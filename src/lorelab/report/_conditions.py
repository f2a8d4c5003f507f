"""The four-condition evaluation's report: the decision, pass rates, paired changes per holdout,
rework, guidance tokens, negative transfer and pollution, Skills to review, and memory failures.

The figures come from the same report ``lorelab evaluate`` prints, computed by
:func:`lorelab.evaluation.conditions.evaluate` from the run's runs file and the manifest in its
``manifest.json`` receipt; nothing is recomputed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lorelab.errors import LorelabError
from lorelab.evaluation.conditions import (
    RUNS_FILE,
    ConditionsReport,
    DreamReceipt,
    ManifestReceipt,
    PreflightReceipt,
    RunAborted,
    RunFinished,
    RunReceipt,
    evaluate,
    read_runs,
)
from lorelab.report._html import (
    Cell,
    Html,
    Section,
    Value,
    banner,
    figure,
    fmt,
    items,
    join,
    link,
    paragraph,
    table,
    tag,
)
from lorelab.report._load import Receipts
from lorelab.report._svg import (
    MEMORY,
    NEGATIVE,
    NEUTRAL,
    NO_MEMORY,
    Bar,
    SlopeLine,
    SlopePanel,
    bar_chart,
    slope_chart,
)

CONDITION_COLOR = {
    "baseline": NO_MEMORY,
    "memory_guided": MEMORY,
    "skill_planned": "#7c3aed",
    "dreaming": "#0f766e",
}
VERDICT_STATE = {
    "advance": "positive",
    "do-not-advance": "negative",
    "inconclusive": "inconclusive",
    "invalid": "missing",
    "insufficient": "missing",
    "incomplete": "missing",
}


@dataclass(slots=True)
class ConditionsRun:
    """A conditions output directory's receipts, and the report evaluated from its runs file."""

    receipts: Receipts
    manifest: ManifestReceipt | None = None
    preflight: PreflightReceipt | None = None
    finished: RunFinished | None = None
    aborted: RunAborted | None = None
    dream: DreamReceipt | None = None
    runs: list[tuple[Path, RunReceipt]] = field(default_factory=list)
    report: ConditionsReport | None = None

    @property
    def directory(self) -> Path:
        """The output directory."""
        return self.receipts.directory

    def run_href(self, task: str, condition: str) -> str | None:
        """The link to one run's receipt, if it was written."""
        for path, run in self.runs:
            if run.task_id == task and run.condition == condition:
                return self.receipts.href(path)
        return None

    def task_ids(self) -> list[str]:
        """Task ids in the manifest's order, else in the receipts'."""
        if self.manifest is not None:
            return [task.id for task in self.manifest.manifest.tasks]
        return list(dict.fromkeys(run.task_id for _, run in self.runs))


def _evaluate(run: ConditionsRun) -> ConditionsReport | None:
    receipts = run.receipts
    path = run.directory / RUNS_FILE
    if not path.exists():
        receipts.note(f"{RUNS_FILE}: missing (no runs file: the run did not complete)")
        return None
    manifest = run.manifest
    try:
        expected = [t.id for t in manifest.manifest.tasks] if manifest is not None else None
        runs = read_runs(path, expected_tasks=expected)
        checked = manifest is not None and runs.manifest_sha256 == manifest.sha256
        if manifest is not None and not checked:
            receipts.note(
                f"{RUNS_FILE}: made under manifest {runs.manifest_sha256}, not the one in "
                f"manifest.json ({manifest.sha256}); evaluated with default thresholds"
            )
        return evaluate(
            runs, manifest.manifest if checked and manifest else None, manifest_checked=checked
        )
    except LorelabError as exc:
        receipts.note(f"{RUNS_FILE}: cannot be evaluated ({str(exc).replace(f'{path}: ', '')})")
        return None


def load_conditions(receipts: Receipts) -> ConditionsRun:
    """Read every receipt a conditions run writes, and evaluate its runs file."""
    run = ConditionsRun(receipts)
    run.manifest = receipts.read(
        "manifest.json", ManifestReceipt, missing="the run stopped before it started"
    )
    run.preflight = receipts.read("preflight.json", PreflightReceipt, missing="no preflight")
    run.aborted = receipts.read("aborted.json", RunAborted)
    run.finished = receipts.read(
        "run.json", RunFinished, missing=None if run.aborted else "the run did not end normally"
    )
    if run.aborted is not None:
        receipts.note(
            f"aborted.json: the run stopped after {run.aborted.runs_completed} runs "
            f"({run.aborted.error}); there is no runs file and no decision"
        )
    run.dream = receipts.read("dream.json", DreamReceipt)
    for path in receipts.listing("runs"):
        receipt = receipts.read_path(path, RunReceipt)
        if receipt is not None:
            run.runs.append((path, receipt))
    run.report = _evaluate(run) if run.aborted is None else None
    return run


def _decision(run: ConditionsRun) -> tuple[Section, Section]:
    report = run.report
    parts: list[Html] = []
    if report is None:
        parts.append(banner("missing", "No decision: the runs could not be evaluated", []))
    else:
        decision = report.decision
        parts.append(
            banner(
                VERDICT_STATE.get(decision.verdict, "inconclusive"),
                f"{decision.condition}: {decision.verdict}",
                [*decision.reasons, f"power: {report.power_note}"],
            )
        )
    manifest, preflight = run.manifest, run.preflight
    rows: list[list[Cell]] = [
        ["evaluation id", manifest.manifest.id if manifest else None],
        ["evidence kind", report.evidence_kind if report else None],
        ["manifest SHA-256", manifest.sha256 if manifest else None],
        ["manifest checked", report.manifest_checked if report else None],
        ["tasks", report.tasks if report else None],
        ["runs", report.runs if report else len(run.runs)],
        ["holdouts", f"{len(report.holdouts)} ({report.holdout_source})" if report else None],
        ["thresholds", report.decision.thresholds_source if report else None],
        ["host argv", " ".join(preflight.host.argv) if preflight else None],
        ["memory profile", preflight.memory.profile if preflight else None],
        ["run status", "complete" if run.finished else "aborted" if run.aborted else None],
        ["finalized", (run.directory / "finalize.json").exists()],
    ]
    about = [table("overview", "The run", ("what", "value"), rows)]
    sources = [
        name
        for name in (
            "manifest.json",
            "preflight.json",
            RUNS_FILE,
            "run.json",
            "aborted.json",
            "dream.json",
            "finalize.json",
        )
        if (run.directory / name).exists()
    ]
    parts.append(
        paragraph(
            Html("receipts: ")
            + join((link(n, run.receipts.href(run.directory / n)) for n in sources), " "),
            "sources",
        )
    )
    if report is not None:
        about.append(tag("h3", "What this protocol cannot prove"))
        about.append(items(report.cannot_prove, "cannot-prove"))
    return Section("decision", "Decision", join(parts)), Section("run", "The run", join(about))


def _pass_rate(run: ConditionsRun, report: ConditionsReport) -> Section:
    href = run.receipts.href(run.directory / RUNS_FILE)
    bars = [
        Bar(
            c.condition,
            c.pass_rate,
            f"{fmt(c.pass_rate)} ({c.passed}/{c.runs - c.memory_failures})",
            CONDITION_COLOR.get(c.condition, NEUTRAL),
        )
        for c in report.conditions
    ]
    rows: list[list[Cell]] = [
        [
            c.condition,
            c.runs,
            c.memory_failures,
            c.passed,
            Value(c.pass_rate),
            Value(c.mean_rework),
            Value(c.retrieval_relevance_rate),
            Value(c.mean_guidance_tokens, 1),
            link(RUNS_FILE, href),
        ]
        for c in report.conditions
    ]
    return Section(
        "pass-rate",
        "Pass rate per condition",
        figure(
            "pass-rate",
            bar_chart("Pass rate per condition", bars, domain=(0.0, 1.0)),
            "Runs that passed over runs measured (memory failures left out), every task.",
            table(
                "pass-rate",
                "Per condition, every task",
                (
                    "condition",
                    "runs",
                    "memory failures",
                    "passed",
                    "pass rate",
                    "mean rework",
                    "relevance rate",
                    "mean guidance tokens",
                    "receipt",
                ),
                rows,
            ),
        ),
    )


def _level(passed: bool, rework: int, worst: int) -> int:
    return min(rework, worst) if passed else worst + 1


def _paired(run: ConditionsRun, report: ConditionsReport) -> Section:
    worst = max(
        [t.baseline_rework for p in report.paired for t in p.tasks]
        + [t.condition_rework for p in report.paired for t in p.tasks]
        + [0]
    )
    levels = [f"passed, {n} rework" for n in range(worst + 1)] + ["failed"]
    panels = [
        SlopePanel(
            p.condition,
            p.condition,
            [
                SlopeLine(
                    _level(t.baseline_passed, t.baseline_rework, worst),
                    _level(t.condition_passed, t.condition_rework, worst),
                    t.difference,
                    f"{t.task_id}: baseline {'passed' if t.baseline_passed else 'failed'} "
                    f"({t.baseline_rework} rework) \u2192 {p.condition} "
                    f"{'passed' if t.condition_passed else 'failed'} ({t.condition_rework} rework)",
                )
                for t in p.tasks
            ],
        )
        for p in report.paired
    ]
    rows: list[list[Cell]] = [
        [
            p.condition,
            link(t.task_id, run.run_href(t.task_id, p.condition)),
            t.baseline_passed,
            t.baseline_rework,
            t.condition_passed,
            t.condition_rework,
            Value(t.difference, signed=True),
            t.polluted,
            t.retrieval_relevant,
            link("baseline", run.run_href(t.task_id, "baseline")),
        ]
        for p in report.paired
        for t in p.tasks
    ]
    summary: list[list[Cell]] = [
        [
            p.condition,
            p.holdouts,
            Value(p.pass_rate_delta, signed=True),
            Value(p.rework_delta, signed=True),
            Value(p.rework_delta_both_passed, signed=True),
            p.sign_test.positive,
            p.sign_test.negative,
            p.sign_test.ties,
            Value(p.sign_test.p_value, 4),
        ]
        for p in report.paired
    ]
    return Section(
        "paired",
        "Paired changes per holdout",
        join(
            [
                figure(
                    "paired",
                    slope_chart(
                        "Holdouts: baseline to each condition", panels, levels, left="baseline"
                    ),
                    "Each line is one holdout task from its baseline outcome to the condition's "
                    "(top is best); green: better, red: worse, grey: tie.",
                    table(
                        "paired",
                        "Per holdout, against baseline",
                        (
                            "condition",
                            "task",
                            "baseline passed",
                            "baseline rework",
                            "condition passed",
                            "condition rework",
                            "difference",
                            "polluted",
                            "retrieval relevant",
                            "baseline receipt",
                        ),
                        rows,
                    ),
                ),
                table(
                    "paired-summary",
                    "Paired comparison with baseline on the holdouts",
                    (
                        "condition",
                        "holdouts",
                        "pass-rate delta",
                        "rework delta",
                        "rework delta (both passed)",
                        "sign +",
                        "sign \u2212",
                        "ties",
                        "p",
                    ),
                    summary,
                ),
            ]
        ),
    )


def _rework_and_tokens(run: ConditionsRun, report: ConditionsReport) -> list[Section]:
    href = run.receipts.href(run.directory / RUNS_FILE)
    color = {c.condition: CONDITION_COLOR.get(c.condition, NEUTRAL) for c in report.conditions}
    rework = [
        Bar(c.condition, c.mean_rework, fmt(c.mean_rework), color[c.condition])
        for c in report.conditions
    ]
    tokens = [
        Bar(
            c.condition,
            c.mean_guidance_tokens,
            f"{fmt(c.mean_guidance_tokens, 1)} ({c.guidance_tokens_known} known)",
            color[c.condition],
        )
        for c in report.conditions
    ]
    rework_rows: list[list[Cell]] = [
        [
            p.condition,
            Value(p.baseline_mean_rework),
            Value(p.condition_mean_rework),
            Value(p.rework_delta, signed=True),
            Value(p.rework_delta_both_passed, signed=True),
            link(RUNS_FILE, href),
        ]
        for p in report.paired
    ]
    token_rows: list[list[Cell]] = [
        [
            p.condition,
            Value(p.token_cost.mean_guidance_tokens, 1),
            Value(p.token_cost.total_guidance_tokens),
            p.token_cost.known,
            Value(p.token_cost.baseline_mean_guidance_tokens, 1),
            link(RUNS_FILE, href),
        ]
        for p in report.paired
    ]
    return [
        Section(
            "rework",
            "Rework",
            figure(
                "rework",
                bar_chart("Mean rework per condition", rework),
                "Further host attempts after a failed verification, per condition (every task).",
                table(
                    "rework",
                    "Rework on the holdouts, against baseline",
                    (
                        "condition",
                        "baseline mean",
                        "condition mean",
                        "delta",
                        "delta (both passed)",
                        "receipt",
                    ),
                    rework_rows,
                ),
            ),
        ),
        Section(
            "guidance",
            "Guidance tokens",
            figure(
                "guidance",
                bar_chart("Mean estimated guidance tokens per condition", tokens),
                "Estimated tokens (ceil(UTF-8 bytes / 4)) of the guidance handed to the host.",
                table(
                    "guidance",
                    "Guidance tokens on the holdouts",
                    ("condition", "mean", "total", "known", "baseline mean", "receipt"),
                    token_rows,
                ),
            ),
        ),
    ]


def _transfer(run: ConditionsRun, report: ConditionsReport) -> Section:
    href = run.receipts.href(run.directory / RUNS_FILE)
    bars = [
        Bar(
            f"{p.condition} {what}", float(n), str(n), NEGATIVE if what == "negative" else "#9a6700"
        )
        for p in report.paired
        for what, n in (("negative", len(p.negative_transfer)), ("polluted", len(p.polluted)))
    ]
    rows: list[list[Cell]] = [
        [
            p.condition,
            len(p.negative_transfer),
            ", ".join(p.negative_transfer) or None,
            len(p.polluted),
            ", ".join(p.polluted) or None,
            Value(p.pollution_rate),
            Value(p.irrelevance_rate),
            link(RUNS_FILE, href),
        ]
        for p in report.paired
    ]
    return Section(
        "transfer",
        "Negative transfer and pollution",
        figure(
            "transfer",
            bar_chart("Negative transfer and polluted holdouts per condition", bars),
            "Negative transfer: baseline passed, the condition failed. Polluted: served "
            "irrelevant guidance, unchecked items or the task's own solution.",
            table(
                "transfer",
                "Negative transfer and pollution on the holdouts",
                (
                    "condition",
                    "negative transfer",
                    "tasks",
                    "polluted",
                    "tasks",
                    "pollution rate",
                    "irrelevance rate",
                    "receipt",
                ),
                rows,
            ),
        ),
    )


def _review(run: ConditionsRun, report: ConditionsReport) -> Section:
    href = run.receipts.href(run.directory / RUNS_FILE)
    rows: list[list[Cell]] = [
        [r.skill_id, r.failed_runs, r.runs, ", ".join(r.failed_tasks), link(RUNS_FILE, href)]
        for r in report.review_required
    ]
    return Section(
        "review",
        "Skills marked review_required",
        table(
            "review",
            "Skills whose runs failed repeatedly",
            ("skill", "failed runs", "runs", "failed tasks", "receipt"),
            rows,
        ),
    )


def _unsupported(preflight: PreflightReceipt | None) -> list[Any] | None:
    # Profiles that cannot perform every protocol operation name them in the preflight.
    if preflight is None:
        return None
    found: list[Any] | None = getattr(preflight.memory, "unsupported", None)
    return found


def _memory_failures(run: ConditionsRun) -> Section:
    failed: list[list[Cell]] = [
        [
            link(f"{r.task_id} \u00d7 {r.condition}", run.receipts.href(p)),
            ", ".join(r.record.memory_calls_failed or []) or "none",
            r.record.host_failure,
            r.record.notes,
        ]
        for p, r in run.runs
        if r.record.memory_calls_failed or r.record.host_failure
    ]
    parts = [
        table(
            "memory-failures",
            "Runs whose host or memory call failed",
            ("run", "memory calls failed", "host failure", "notes"),
            failed,
        )
    ]
    unsupported = _unsupported(run.preflight)
    href = run.receipts.href(run.directory / "preflight.json") if run.preflight else None
    if unsupported is None:
        parts.append(paragraph("Unsupported operations: not recorded.", "unknown"))
    else:
        rows: list[list[Cell]] = [
            [
                str(getattr(u, "operation", u)),
                str(getattr(u, "reason", "")) or None,
                link("preflight.json", href),
            ]
            for u in unsupported
        ]
        parts.append(
            table(
                "unsupported",
                "Protocol operations the memory profile cannot perform",
                ("operation", "reason", "receipt"),
                rows,
            )
        )
    if run.report is not None:
        flagged: list[list[Cell]] = [
            [
                link(f"{f.task_id} \u00d7 {f.condition}", run.run_href(f.task_id, f.condition)),
                f.holdout,
                ", ".join(f.flags),
            ]
            for f in run.report.flagged_runs
        ]
        parts.append(
            table(
                "flagged",
                "Runs that are not a clean measurement (kept, counted)",
                ("run", "holdout", "flags"),
                flagged,
            )
        )
    return Section("memory-failures", "Memory failures and unsupported operations", join(parts))


def _all_runs(run: ConditionsRun) -> Section:
    rows: list[list[Cell]] = [
        [
            link(f"{r.task_id} \u00d7 {r.condition}", run.receipts.href(p)),
            r.holdout,
            r.record.passed,
            r.record.rework_count,
            r.record.guidance_tokens,
            r.record.retrieval_relevant,
            r.host_time_ms,
            ", ".join(r.flags) or None,
        ]
        for p, r in run.runs
    ]
    return Section(
        "runs",
        "Every run",
        table(
            "runs",
            "Every run receipt in runs/",
            (
                "run",
                "holdout",
                "passed",
                "rework",
                "guidance tokens",
                "retrieval relevant",
                "host ms",
                "flags",
            ),
            rows,
        ),
    )


def conditions_sections(run: ConditionsRun) -> list[Section]:
    """The report's sections, in order; the figures need the evaluated runs file."""
    decision, about = _decision(run)
    sections = [decision]
    if run.report is not None:
        sections += [
            _pass_rate(run, run.report),
            _paired(run, run.report),
            *_rework_and_tokens(run, run.report),
            _transfer(run, run.report),
            _review(run, run.report),
        ]
    sections += [_memory_failures(run), _all_runs(run), about]
    return sections


def conditions_title(run: ConditionsRun) -> str:
    """A short name for the run."""
    name = run.manifest.manifest.id if run.manifest else "unknown evaluation"
    return f"four-condition evaluation: {name}"
