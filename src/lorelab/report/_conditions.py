"""The four-condition evaluation's report: the decision, pass rates, paired changes per holdout,
rework, guidance tokens, negative transfer and pollution, Skills to review, and memory failures.

The figures come from the same report ``lorelab eval conditions decide`` prints, computed by
:func:`lorelab.evaluation.conditions.evaluate` from the run's runs file and the manifest in its
``manifest.json`` receipt; nothing is recomputed here.
"""

from __future__ import annotations

from typing import Any

from lorelab.evaluation.conditions import (
    RUNS_FILE,
    ConditionsReport,
    PreflightReceipt,
)
from lorelab.report._conditions_load import ConditionsRun, failure
from lorelab.report._html import (
    NOT_RECORDED,
    Cell,
    Html,
    Section,
    Value,
    banner,
    cause_lines,
    figure,
    fmt,
    items,
    join,
    link,
    paragraph,
    table,
    tag,
)
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


def _failed_runs(run: ConditionsRun) -> Html:
    """At the top: how many runs failed (host or memory), and why."""
    causes = [cause for _, r in run.runs if (cause := failure(r)) is not None]
    if not causes:
        return Html("")
    total = len(run.runs)
    every = len(causes) == total
    head = (
        f"No run completed: {total} of {total} runs failed"
        if every
        else f"{len(causes)} of {total} runs failed"
    )
    lines = [
        *cause_lines(causes),
        "a run whose host failed counts as failed, as the protocol scores it (a memory failure "
        "is left out of the pass rate); a condition none of whose runs completed has no bar",
    ]
    return banner("missing" if every else "inconclusive", head, lines)


def _no_retrieval(condition: str) -> str:
    # The baseline has no memory: its relevance is null because nothing was retrieved.
    return "no retrieval (baseline)" if condition == "baseline" else NOT_RECORDED


def _bar(done: dict[str, bool], condition: str, value: float | None, text: str) -> Bar:
    """A condition's bar; none when no run of the condition completed (its value is a score)."""
    if not done.get(condition, True):
        return Bar(condition, None, f"no run completed (counts {text})")
    return Bar(condition, value, text, CONDITION_COLOR.get(condition, NEUTRAL))


def _decision(run: ConditionsRun) -> tuple[Section, Section]:
    report = run.report
    parts: list[Html] = [_failed_runs(run)]
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
    done = run.completed()
    bars = [
        _bar(
            done,
            c.condition,
            c.pass_rate,
            f"{fmt(c.pass_rate)} ({c.passed}/{c.runs - c.memory_failures})",
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
            Value(c.retrieval_relevance_rate, unknown=_no_retrieval(c.condition)),
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
            bar_chart(
                "Pass rate per condition",
                bars,
                domain=(0.0, 1.0),
                axis="pass rate (runs passed / runs measured)",
            ),
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


def _level(passed: bool, rework: int | None, worst: int, unknown: bool) -> int:
    if not passed:
        return worst + 1 + int(unknown)
    # A passed run whose rework is unknown gets its own level, between the counts and failed.
    return worst + 1 if rework is None else min(rework, worst)


def _rework_text(rework: int | None) -> str:
    return "rework unknown" if rework is None else f"{rework} rework"


def _slopes(run: ConditionsRun, report: ConditionsReport) -> tuple[list[SlopePanel], list[str]]:
    counts = [t.baseline_rework for p in report.paired for t in p.tasks] + [
        t.condition_rework for p in report.paired for t in p.tasks
    ]
    worst = max([count for count in counts if count is not None] + [0])
    unknown = any(
        (t.baseline_passed and t.baseline_rework is None)
        or (t.condition_passed and t.condition_rework is None)
        for p in report.paired
        for t in p.tasks
    )
    levels = [f"passed, {n} rework" for n in range(worst + 1)]
    levels += ["passed, rework unknown"] if unknown else []
    levels += ["failed"]
    panels = [
        SlopePanel(
            p.condition,
            p.condition,
            [
                SlopeLine(
                    t.task_id,
                    _level(t.baseline_passed, t.baseline_rework, worst, unknown),
                    _level(t.condition_passed, t.condition_rework, worst, unknown),
                    t.difference,
                    f"{t.task_id}: baseline {'passed' if t.baseline_passed else 'failed'} "
                    f"({_rework_text(t.baseline_rework)}) \u2192 {p.condition} "
                    f"{'passed' if t.condition_passed else 'failed'} "
                    f"({_rework_text(t.condition_rework)})",
                    run.failed(t.task_id, "baseline"),
                    run.failed(t.task_id, p.condition),
                )
                for t in p.tasks
            ],
        )
        for p in report.paired
    ]
    return panels, levels


PAIRED_HEADERS = ("condition", "task", "baseline passed", "baseline rework", "condition passed",
                  "condition rework", "difference", "polluted", "retrieval relevant",
                  "baseline receipt")  # fmt: skip
SUMMARY_HEADERS = ("condition", "holdouts", "pass-rate delta", "rework delta",
                   "rework delta (both passed)", "sign +", "sign \u2212", "ties", "p")  # fmt: skip


def _paired(run: ConditionsRun, report: ConditionsReport) -> Section:
    panels, levels = _slopes(run, report)
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
                    "Each line is one holdout task, named beside both of its dots, from its "
                    "baseline outcome to the condition's (top is best); the dots of a level each "
                    "have a row of their own; green: better, red: worse, grey: tie; a hollow dot: "
                    "the host or memory failed, the run counts as the protocol scores it.",
                    table(
                        "paired",
                        "Per holdout, against baseline",
                        PAIRED_HEADERS,
                        rows,
                    ),
                ),
                table(
                    "paired-summary",
                    "Paired comparison with baseline on the holdouts",
                    SUMMARY_HEADERS,
                    summary,
                ),
            ]
        ),
    )


def _rework_and_tokens(run: ConditionsRun, report: ConditionsReport) -> list[Section]:
    href = run.receipts.href(run.directory / RUNS_FILE)
    done = run.completed()
    rework = [_bar(done, c.condition, c.mean_rework, fmt(c.mean_rework)) for c in report.conditions]
    tokens = [
        _bar(
            done,
            c.condition,
            c.mean_guidance_tokens,
            f"{fmt(c.mean_guidance_tokens, 1)} ({c.guidance_tokens_known} known)",
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
            ", ".join(p.negative_transfer) or "none",
            len(p.polluted),
            ", ".join(p.polluted) or "none",
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
            Value(r.record.retrieval_relevant, unknown=_no_retrieval(r.condition)),
            Value(r.host_time_ms, milliseconds=True),
            ", ".join(r.flags) or "none",
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
                "host time",
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
