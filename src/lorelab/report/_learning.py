"""The learning evaluation's report: the label, the paired plot, recall, detections, cost, and
every trial that did not count, all read from the run's typed receipts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from lorelab.evaluation.learning.records import ARMS, Summary, TrialRecord
from lorelab.report._html import (
    NOT_RECORDED,
    Cell,
    Html,
    Section,
    Value,
    banner,
    cause_lines,
    duration,
    esc,
    figure,
    fmt,
    items,
    join,
    link,
    paragraph,
    table,
)
from lorelab.report._learning_load import LearningRun, load_learning
from lorelab.report._svg import (
    MEMORY,
    NEUTRAL,
    NO_MEMORY,
    POSITIVE,
    SIGN_COLOR,
    SIGN_SYMBOL,
    Bar,
    MatrixCell,
    PairRow,
    bar_chart,
    matrix_chart,
    paired_chart,
)

ARM_COLOR = {"memory": MEMORY, "no-memory": NO_MEMORY}
ARM_SHORT = {"memory": "M", "no-memory": "N"}

__all__ = ["LearningRun", "learning_sections", "learning_title", "load_learning"]


def _not_qualified(run: LearningRun) -> Html:
    """At the top: how many trials did not qualify, and why (their recall is the 0 they count,
    not a measurement)."""
    missed = [t for _, t in run.trials if t.status != "qualified"]
    if not missed:
        return Html("")
    causes = [t.reason or f"{t.status}, reason not recorded" for t in missed]
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(Counter(t.status for t in missed).items()))
    every = len(missed) == len(run.trials)
    head = (
        f"No trial qualified: {len(missed)} of {len(run.trials)} ({statuses})"
        if every
        else f"{len(missed)} of {len(run.trials)} trials did not qualify ({statuses})"
    )
    lines = cause_lines(causes)
    lines.append(
        "each counts recall 0, as the protocol scores it; the figures draw such a trial as a "
        "hollow dot, and give no bar to an arm or specification without a qualified trial"
    )
    return banner("missing" if every else "inconclusive", head, lines)


def _overview(run: LearningRun) -> tuple[Section, Section]:
    summary, manifest = run.summary, run.manifest
    parts: list[Html] = [_not_qualified(run)]
    if summary is None:
        outcome = run.controller.outcome if run.controller else NOT_RECORDED
        parts.append(
            banner(
                "missing", "No summary: this run has no label", [f"controller outcome: {outcome}"]
            )
        )
    else:
        paired = summary.paired
        effect = paired.effect
        interval = (
            f"mean per-specification recall difference {fmt(effect.mean_difference, signed=True)}, "
            f"95% interval [{fmt(effect.ci95_low, signed=True)}, "
            f"{fmt(effect.ci95_high, signed=True)}] ({effect.method}); it never changes the label"
        )
        test = paired.sign_test
        parts.append(
            banner(
                paired.label,
                f"label: {paired.label}",
                [
                    f"why: {paired.label_reason}",
                    f"power: {summary.power_note}",
                    f"effect size: {interval}",
                    f"sign test (exact, two-sided, ties excluded): +{test['positive']} "
                    f"\u2212{test['negative']} ={test['ties']}, p = {test['pValue']:.4g} "
                    f"(alpha {paired.alpha})",
                ],
            )
        )
        placebo = summary.paired_placebo
        if placebo is not None:
            test = placebo.sign_test
            parts.append(
                banner(
                    placebo.label,
                    f"memory against placebo: {placebo.label}",
                    [
                        f"why: {placebo.label_reason}",
                        "the placebo arm gets as many lessons of about the same size, from "
                        "other specifications' history: this comparison separates relevant "
                        "memory from any extra input",
                        f"sign test (exact, two-sided, ties excluded): +{test['positive']} "
                        f"\u2212{test['negative']} ={test['ties']}, p = {test['pValue']:.4g}; "
                        f"mean difference {fmt(placebo.effect.mean_difference, signed=True)}",
                    ],
                )
            )
    rows: list[tuple[str, Cell]] = [
        ("evidence kind", summary.evidence_kind if summary else None),
        ("dataset", manifest.dataset if manifest else None),
        ("manifest id", manifest.manifest_id if manifest else None),
        ("manifest SHA-256", manifest.manifest_sha256 if manifest else None),
        ("runner", manifest.runner if manifest else None),
        ("worker argv", " ".join(manifest.settings.agent) if manifest else None),
        ("repetitions", manifest.settings.repeat if manifest else None),
        ("order seed", manifest.order_seed if manifest else None),
        ("lessons in the frozen memory", summary.frozen_lessons if summary else None),
        ("controller outcome", run.controller.outcome if run.controller else None),
        (
            "elapsed",
            Value(run.controller.elapsed_ms if run.controller else None, milliseconds=True),
        ),
    ]
    files = [
        ("summary.json", summary),
        ("manifest.json", manifest),
        ("controller.json", run.controller),
    ]
    sources = join(
        link(name, run.receipts.href(run.directory / name)) + Html(" ")
        for name, model in files
        if model is not None
    )
    parts.append(paragraph(Html("receipts: ") + sources, "sources"))
    about = table("overview", "The run", ("what", "value"), [list(r) for r in rows])
    return Section("overview", "Label", join(parts)), Section("run", "The run", about)


def _sign(difference: float) -> int:
    return 1 if difference > 0 else -1 if difference < 0 else 0


def _void(trial: tuple[Path, TrialRecord] | None) -> bool:
    return trial is not None and trial[1].status != "qualified"


def _recall(trial: tuple[Path, TrialRecord] | None) -> str:
    if trial is None:
        return NOT_RECORDED
    if _void(trial):
        return f"{fmt(trial[1].recall)} ({trial[1].status}: did not qualify, counts 0)"
    return fmt(trial[1].recall)


def _repetitions(run: LearningRun) -> tuple[list[PairRow], list[list[Cell]]]:
    """Per specification and repetition: the two trials' recall, the sign, the receipts."""
    rows: list[PairRow] = []
    data: list[list[Cell]] = []
    for spec in run.specifications():
        for rep in range(1, run.repetitions() + 1):
            memory, plain = run.trial(spec, rep, "memory"), run.trial(spec, rep, "no-memory")
            right = memory[1].recall if memory else None
            left = plain[1].recall if plain else None
            difference = right - left if right is not None and left is not None else None
            sign = _sign(difference) if difference is not None else None
            tooltip = f"{spec} r{rep}: memory {_recall(memory)}, no-memory {_recall(plain)}"
            voids = (_void(plain), _void(memory))
            rows.append(PairRow(f"{spec} r{rep}", left, right, sign, tooltip, *voids))
            links = join(
                [
                    link("memory", run.receipts.href(memory[0])) if memory else esc("-"),
                    Html(" "),
                    link("no-memory", run.receipts.href(plain[0])) if plain else esc("-"),
                ]
            )
            symbol = SIGN_SYMBOL[sign] if sign is not None else None
            data.append(
                [
                    spec,
                    rep,
                    Value(right),
                    Value(left),
                    Value(difference, signed=True),
                    symbol,
                    links,
                ]
            )
    return rows, data


def _spec_differences(run: LearningRun, summary: Summary) -> Html:
    specs = summary.paired.specs
    measured = {t.specification for _, t in run.trials if t.status == "qualified"}
    bars = [
        Bar(p.specification, p.difference, fmt(p.difference, signed=True),
            SIGN_COLOR[_sign(p.difference)])
        if p.specification in measured
        else Bar(p.specification, None, f"no trial qualified (counts {fmt(p.difference)})")
        for p in specs
    ]  # fmt: skip
    href = run.receipts.href(run.directory / "summary.json")
    rows: list[list[Cell]] = [
        [p.specification, Value(p.memory_recall), Value(p.no_memory_recall),
         Value(p.difference, signed=True), link("summary.json", href)]
        for p in specs
    ]  # fmt: skip
    headers: tuple[str, ...] = ("specification", "memory", "no-memory", "difference", "receipt")
    if summary.paired_placebo is not None:
        headers = (*headers[:4], "placebo", "memory \u2212 placebo", "receipt")
        for row, sham in zip(rows, summary.paired_placebo.specs, strict=True):
            row[4:4] = [Value(sham.placebo_recall), Value(sham.difference, signed=True)]
    return figure(
        "spec-differences",
        bar_chart(
            "Mean recall difference per specification",
            bars,
            domain=(-1.0, 1.0),
            axis="mean recall difference, memory \u2212 no-memory",
        ),
        "The sign test's units: per specification, mean recall memory minus no-memory.",
        table("spec-differences", "Per specification (the sign test's units)", headers, rows),
    )


def _paired(run: LearningRun) -> Section:
    rows, data = _repetitions(run)
    chart = paired_chart(
        "Recall per repetition, memory vs no-memory",
        rows,
        left="no-memory",
        right="memory",
        axis="recall (detected / planted defects)",
    )
    headers = ("specification", "repetition", "memory", "no-memory", "difference", "sign",
               "receipts")  # fmt: skip
    body = [
        paragraph(
            "Each row is one specification and repetition: the memory and no-memory trials' "
            "recall (detected / planted defects; a trial that did not qualify counts 0 and is "
            "drawn hollow, its line dashed). The line's colour and the mark on the right give "
            "the sign of memory minus no-memory; two equal values sit one above the other."
        ),
        figure(
            "paired",
            chart,
            "Recall per repetition (dots) and the sign of each difference (line, mark).",
            table("paired", "Recall per repetition", headers, data),
        ),
    ]
    if run.summary is not None:
        body.append(_spec_differences(run, run.summary))
    return Section("paired", "Paired recall per specification", join(body))


def _arms(run: LearningRun) -> Section:
    summary = run.summary
    if summary is None:
        return Section(
            "recall", "Recall per arm", paragraph("not recorded: no summary.json", "unknown")
        )
    href = run.receipts.href(run.directory / "summary.json")
    bars = [
        Bar(
            arm,
            data.defect_recall,
            f"{fmt(data.defect_recall)} ({data.detected}/{data.defects})",
            ARM_COLOR.get(arm, NEUTRAL),
        )
        if data.qualified_trials
        else Bar(
            arm,
            None,
            f"no trial qualified: 0 of {data.trials} (counts {fmt(data.defect_recall)})",
        )
        for arm, data in summary.arms.items()
    ]
    rows: list[list[Cell]] = [
        [
            arm,
            d.trials,
            d.qualified_trials,
            d.defects,
            d.detected,
            Value(d.defect_recall),
            d.passing_cases,
            d.trials_with_lesson_used,
            link("summary.json", href),
        ]
        for arm, d in summary.arms.items()
    ]
    return Section(
        "recall",
        "Recall per arm",
        figure(
            "recall",
            bar_chart(
                "Defect recall per arm",
                bars,
                domain=(0.0, 1.0),
                axis="recall (detected / planted defects)",
            ),
            "Planted defects detected over planted defects, per arm (all trials).",
            table(
                "recall",
                "Recall per arm",
                (
                    "arm",
                    "trials",
                    "qualified",
                    "defects",
                    "detected",
                    "recall",
                    "passing cases",
                    "trials with a lesson used",
                    "receipt",
                ),
                rows,
            ),
        ),
    )


_STATE = {
    "detected": (POSITIVE, "\u2713", "detected (counted)"),
    "survived": ("#8b949e", "\u00b7", "survived"),
    "broken": ("#b7791f", "!", "broken defect run"),
    "unscored": ("#57606a", "?", "no outcome (no valid baseline)"),
    "void": ("#30363d", "\u00d7", "trial did not qualify: counts 0"),
    "absent": ("#e6e8eb", "", "no trial receipt"),
}


def _detection(run: LearningRun) -> Section:
    columns = [(rep, arm) for rep in range(1, run.repetitions() + 1) for arm in ARMS]
    labels: list[str] = []
    grid: list[list[MatrixCell]] = []
    data: list[list[Cell]] = []
    for spec in run.specifications():
        found = [run.trial(spec, rep, arm) for rep, arm in columns]
        defects = list(dict.fromkeys(d.defect for f in found if f for d in f[1].defects))
        for defect in defects:
            labels.append(f"{spec} / {defect}")
            cells: list[MatrixCell] = []
            row: list[Cell] = [spec, defect]
            for (rep, arm), entry in zip(columns, found, strict=True):
                state, text = _cell_state(entry[1] if entry else None, defect)
                color, symbol, _meaning = _STATE[state]
                cells.append(MatrixCell(color, symbol, f"{spec} / {defect}, r{rep} {arm}: {text}"))
                row.append(link(text, run.receipts.href(entry[0])) if entry else None)
            grid.append(cells)
            data.append(row)
    headers = ["specification", "defect", *(f"r{rep} {arm}" for rep, arm in columns)]
    chart = matrix_chart(
        "Which generated suite caught which planted defect",
        labels,
        [(f"r{rep}{ARM_SHORT[arm]}", ARM_COLOR[arm]) for rep, arm in columns],
        grid,
        [(c, s, m) for c, s, m in _STATE.values()],
    )
    return Section(
        "detection",
        "Defect \u00d7 trial detections",
        figure(
            "detection",
            chart,
            "Rows: planted defects; columns: trials (repetition, M = memory, N = no-memory).",
            table("detection", "Defect outcome per trial", headers, data),
        ),
    )


def _cell_state(record: TrialRecord | None, defect: str) -> tuple[str, str]:
    if record is None:
        return "absent", "no receipt"
    result = next((d for d in record.defects if d.defect == defect), None)
    if result is None or result.outcome is None:
        return ("void" if record.status != "qualified" else "unscored"), "no outcome"
    status = result.outcome.status
    if record.status != "qualified":
        return "void", f"{status}, not counted ({record.status})"
    return status, status


def _cost(run: LearningRun) -> Section:
    summary = run.summary
    if summary is None:
        return Section(
            "cost", "Time and bytes per arm", paragraph("not recorded: no summary.json", "unknown")
        )
    arms = summary.arms
    href = run.receipts.href(run.directory / "summary.json")
    time_bars = [
        Bar(a, float(d.generation_ms), duration(d.generation_ms), ARM_COLOR.get(a, NEUTRAL))
        for a, d in arms.items()
    ]
    byte_bars = [
        Bar(f"{a} {what}", float(n), f"{n} B", ARM_COLOR.get(a, NEUTRAL))
        for a, d in arms.items()
        for what, n in (("input", d.input_bytes), ("output", d.output_bytes))
    ]
    rows: list[list[Cell]] = [
        [
            a,
            Value(d.generation_ms, milliseconds=True),
            d.input_bytes,
            d.output_bytes,
            d.calls,
            d.attempted_calls,
            d.spawned_calls,
            Value(d.billing_usd, 4),
            link("summary.json", href),
        ]
        for a, d in arms.items()
    ]
    data = table(
        "cost",
        "Time and bytes per arm",
        (
            "arm",
            "generation time",
            "input bytes",
            "output bytes",
            "calls",
            "attempted",
            "spawned",
            "billing USD",
            "receipt",
        ),
        rows,
    )
    return Section(
        "cost",
        "Time and bytes per arm",
        join(
            [
                figure(
                    "time",
                    bar_chart("Generation time per arm (ms)", time_bars),
                    "Summed role-call time per arm.",
                    data,
                ),
                figure(
                    "bytes",
                    bar_chart("Bytes per arm", byte_bars),
                    "Canonical JSON bytes sent to and received from the worker.",
                    items(f"{k}: {v}" for k, v in summary.byte_accounting.items()),
                ),
            ]
        ),
    )


def _not_counted(run: LearningRun) -> Section:
    rows: list[list[Cell]] = [
        [
            link(str(t.position), run.receipts.href(p)),
            t.specification,
            t.repetition,
            t.arm,
            t.status,
            t.complete,
            t.reason,
            "; ".join(t.identity_checks) or "none",
        ]
        for p, t in run.trials
        if t.status != "qualified"
    ]
    parts = [
        paragraph(
            "Every trial that was invalid, rejected, failed, unstable or not run counts zero."
        ),
        table(
            "not-counted",
            "Trials that did not qualify",
            (
                "trial",
                "specification",
                "repetition",
                "arm",
                "status",
                "complete",
                "reason",
                "identity checks",
            ),
            rows,
        ),
    ]
    if run.labels:
        parts.append(
            table(
                "ground-truth",
                "Specifications whose labels failed ground truth",
                ("specification", "reason", "receipt"),
                [
                    [lab.fixture, lab.reason, link(p.name, run.receipts.href(p))]
                    for p, lab in run.labels
                ],
            )
        )
    return Section("not-counted", "Invalid, rejected and failed trials", join(parts))


def learning_sections(run: LearningRun) -> list[Section]:
    """The report's sections, in order."""
    label, about = _overview(run)
    return [label, _paired(run), _arms(run), _detection(run), _cost(run), _not_counted(run), about]


def learning_title(run: LearningRun) -> str:
    """A short name for the run."""
    dataset = run.manifest.dataset if run.manifest else "unknown dataset"
    return f"learning evaluation: {dataset}"
