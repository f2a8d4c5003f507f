"""The learning evaluation's report: the label, the paired plot, recall, detections, cost, and
every trial that did not count, all read from the run's typed receipts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lorelab.evaluation.learning.records import (
    ARMS,
    ControllerReceipt,
    LabelsReceipt,
    ManifestReceipt,
    Summary,
    TrialRecord,
)
from lorelab.report._html import (
    NOT_RECORDED,
    Cell,
    Html,
    Section,
    Value,
    banner,
    esc,
    figure,
    fmt,
    items,
    join,
    link,
    paragraph,
    table,
)
from lorelab.report._load import Receipts
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


@dataclass(slots=True)
class LearningRun:
    """A learning output directory's receipts, as far as they exist."""

    receipts: Receipts
    manifest: ManifestReceipt | None = None
    controller: ControllerReceipt | None = None
    summary: Summary | None = None
    trials: list[tuple[Path, TrialRecord]] = field(default_factory=list)
    labels: list[tuple[Path, LabelsReceipt]] = field(default_factory=list)

    @property
    def directory(self) -> Path:
        """The output directory."""
        return self.receipts.directory

    def trial(self, spec: str, repetition: int, arm: str) -> tuple[Path, TrialRecord] | None:
        """The receipt of one trial, if it was written."""
        for path, record in self.trials:
            if (record.specification, record.repetition, record.arm) == (spec, repetition, arm):
                return path, record
        return None

    def specifications(self) -> list[str]:
        """Specifications in the summary's order, else the schedule's, else the trials'."""
        if self.summary is not None:
            return [pair.specification for pair in self.summary.paired.specs]
        source = self.manifest.schedule if self.manifest is not None else []
        names = [entry.specification for entry in source] or [
            t.specification for _, t in self.trials
        ]
        return list(dict.fromkeys(names))

    def repetitions(self) -> int:
        """Repetitions per specification and arm, as set (else as seen)."""
        if self.manifest is not None:
            return self.manifest.settings.repeat
        return max((t.repetition for _, t in self.trials), default=0)


def load_learning(receipts: Receipts) -> LearningRun:
    """Read every receipt a learning run writes; what is missing becomes a problem."""
    run = LearningRun(receipts)
    run.manifest = receipts.read(
        "manifest.json", ManifestReceipt, missing="the run stopped before its manifest"
    )
    run.controller = receipts.read(
        "controller.json", ControllerReceipt, missing="the run did not end normally"
    )
    outcome = run.controller.outcome if run.controller is not None else "unknown"
    run.summary = receipts.read(
        "summary.json", Summary, missing=f"no summary was written (controller outcome: {outcome})"
    )
    for path in receipts.listing("trials"):
        record = receipts.read_path(path, TrialRecord)
        if record is not None:
            run.trials.append((path, record))
    run.trials.sort(key=lambda item: item[1].position)
    for path in sorted(receipts.directory.glob("labels-*.json")):
        labels = receipts.read_path(path, LabelsReceipt)
        if labels is not None:
            run.labels.append((path, labels))
    if run.manifest is not None:
        written = {(t.specification, t.repetition, t.arm) for _, t in run.trials}
        absent = [
            f"{e.position}"
            for e in run.manifest.schedule
            if (e.specification, e.repetition, e.arm) not in written
        ]
        if absent:
            receipts.note(
                f"trials/: {len(absent)} of {len(run.manifest.schedule)} scheduled trials have "
                f"no receipt (positions {', '.join(absent)})"
            )
    return run


def _overview(run: LearningRun) -> tuple[Section, Section]:
    summary, manifest = run.summary, run.manifest
    parts: list[Html] = []
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
        ("elapsed ms", run.controller.elapsed_ms if run.controller else None),
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
            tooltip = f"{spec} r{rep}: memory {fmt(right)}, no-memory {fmt(left)}"
            rows.append(PairRow(f"{spec} r{rep}", left, right, sign, tooltip))
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
    bars = [
        Bar(p.specification, p.difference, fmt(p.difference, signed=True),
            SIGN_COLOR[_sign(p.difference)])
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
        bar_chart("Mean recall difference per specification", bars, domain=(-1.0, 1.0)),
        "The sign test's units: per specification, mean recall memory minus no-memory.",
        table("spec-differences", "Per specification (the sign test's units)", headers, rows),
    )


def _paired(run: LearningRun) -> Section:
    rows, data = _repetitions(run)
    chart = paired_chart(
        "Recall per repetition, memory vs no-memory", rows, left="no-memory", right="memory"
    )
    headers = ("specification", "repetition", "memory", "no-memory", "difference", "sign",
               "receipts")  # fmt: skip
    body = [
        paragraph(
            "Each row is one specification and repetition: the memory and no-memory trials' "
            "recall (detected / planted defects; a trial that did not qualify counts 0). The "
            "line's colour and the mark on the right give the sign of memory minus no-memory."
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
            bar_chart("Defect recall per arm", bars, domain=(0.0, 1.0)),
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
        Bar(a, float(d.generation_ms), f"{d.generation_ms} ms", ARM_COLOR.get(a, NEUTRAL))
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
            d.generation_ms,
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
            "generation ms",
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
            "; ".join(t.identity_checks) or None,
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
