"""The context evaluation's report: per record, the failure classes and the boundaries, and the
baseline deltas when a comparison was made; for a scan of recorded sessions, the repeated
failed commands per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lorelab.evaluation.context import (
    FAILURE_CLASSES,
    RECEIPT_JSON,
    SCAN_JSON,
    ContextReceipt,
    ScanReceipt,
)
from lorelab.report._html import (
    Cell,
    Section,
    Value,
    banner,
    figure,
    join,
    link,
    paragraph,
    table,
)
from lorelab.report._load import Receipts
from lorelab.report._svg import (
    MEMORY,
    NEGATIVE,
    NEUTRAL,
    POSITIVE,
    SIGN_COLOR,
    Bar,
    MatrixCell,
    bar_chart,
    matrix_chart,
)

BOUNDARIES: Final = ("compaction", "restart", "child_handoff")
_ZERO: Final = "#d0d7de"


@dataclass(slots=True)
class ContextRun:
    """A context evaluation's output directory: its one receipt, when it can be read."""

    receipts: Receipts
    receipt: ContextReceipt | None

    @property
    def path(self) -> Path:
        """The receipt file."""
        return self.receipts.directory / RECEIPT_JSON


@dataclass(slots=True)
class ScanRun:
    """A scan's output directory: its one receipt, when it can be read."""

    receipts: Receipts
    receipt: ScanReceipt | None

    @property
    def path(self) -> Path:
        """The receipt file."""
        return self.receipts.directory / SCAN_JSON


def load_context(receipts: Receipts) -> ContextRun:
    """Read ``context-receipt.json``."""
    return ContextRun(
        receipts, receipts.read(RECEIPT_JSON, ContextReceipt, missing="no context receipt")
    )


def load_scan(receipts: Receipts) -> ScanRun:
    """Read ``context-scan.json``."""
    return ScanRun(receipts, receipts.read(SCAN_JSON, ScanReceipt, missing="no scan receipt"))


def _missing(name: str) -> list[Section]:
    return [Section("overview", "Summary", banner("missing", f"No readable {name}", []))]


def context_sections(run: ContextRun) -> list[Section]:
    """The sections of a context evaluation's report."""
    receipt = run.receipt
    if receipt is None:
        return _missing(RECEIPT_JSON)
    href = run.receipts.href(run.path)
    summary = receipt.summary
    state = "negative" if summary.label_disagreements else "info"
    overview = join(
        [
            banner(
                state,
                f"{summary.records} records: {summary.passes} PASS, {summary.failures} FAIL",
                [
                    f"label disagreements: {summary.label_disagreements}",
                    f"mode: {receipt.mode}; exit code {receipt.exit_code}",
                ],
            ),
            table(
                "overview",
                "The run",
                ("what", "value"),
                [
                    ["run id", receipt.run_id],
                    ["created", receipt.created_at.isoformat()],
                    ["lorelab version", receipt.evaluator.lorelab_version],
                    ["records", summary.records],
                    ["passes", summary.passes],
                    ["failures", summary.failures],
                    ["label disagreements", summary.label_disagreements],
                    ["receipt", link(RECEIPT_JSON, href)],
                ],
            ),
        ]
    )
    return [
        Section("overview", "Summary", overview),
        _failures(receipt, href),
        _boundaries(receipt, href),
        _baseline(receipt, href),
    ]


def _failures(receipt: ContextReceipt, href: str) -> Section:
    names = [r.record_id for r in receipt.records]
    counts = [r.failures.as_dict() for r in receipt.records]
    grid = [
        [
            MatrixCell(NEGATIVE if c[k] else _ZERO, str(c[k]), f"{n}: {k} {c[k]}")
            for k in FAILURE_CLASSES
        ]
        for n, c in zip(names, counts, strict=True)
    ]
    rows: list[list[Cell]] = [
        [
            link(r.record_id, href),
            r.verdict,
            r.label,
            r.label_agrees,
            *(c[k] for k in FAILURE_CLASSES),
            r.facts_scored,
        ]
        for r, c in zip(receipt.records, counts, strict=True)
    ]
    chart = matrix_chart(
        "Failure classes per record",
        names,
        [(str(i + 1), NEUTRAL) for i in range(len(FAILURE_CLASSES))],
        grid,
        [(NEGATIVE, "n", "failures of the class"), (_ZERO, "0", "none")],
    )
    key = "; ".join(f"{i + 1}: {k}" for i, k in enumerate(FAILURE_CLASSES))
    return Section(
        "failures",
        "Failure classes per fixture",
        figure(
            "failures",
            chart,
            f"Columns: {key}. A record passes only with zero failures of every class.",
            table(
                "failures",
                "Failure counts per record",
                ("record", "verdict", "label", "label agrees", *FAILURE_CLASSES, "facts scored"),
                rows,
            ),
        ),
    )


def _boundary_cell(required: bool, observed: bool) -> tuple[str, str, str]:
    if required and observed:
        return POSITIVE, "\u2713", "required, recorded"
    if required:
        return NEGATIVE, "\u00d7", "required, not recorded"
    if observed:
        return MEMORY, "o", "recorded, not required"
    return "#eef0f3", "", "neither"


def _boundaries(receipt: ContextReceipt, href: str) -> Section:
    grid: list[list[MatrixCell]] = []
    for r in receipt.records:
        cells = []
        for kind in BOUNDARIES:
            color, symbol, meaning = _boundary_cell(
                kind in r.boundary_kinds, kind in r.observed_boundaries
            )
            cells.append(MatrixCell(color, symbol, f"{r.record_id}: {kind} {meaning}"))
        grid.append(cells)
    rows: list[list[Cell]] = [
        [
            link(r.record_id, href),
            ", ".join(r.boundary_kinds) or "none",
            ", ".join(r.observed_boundaries) or "none",
            r.failures.missing_boundaries,
        ]
        for r in receipt.records
    ]
    chart = matrix_chart(
        "Boundaries per record",
        [r.record_id for r in receipt.records],
        [("C", NEUTRAL), ("R", NEUTRAL), ("H", NEUTRAL)],
        grid,
        [
            (c, s, m)
            for c, s, m in (
                _boundary_cell(True, True),
                _boundary_cell(True, False),
                _boundary_cell(False, True),
            )
        ],
    )
    return Section(
        "boundaries",
        "Boundaries",
        figure(
            "boundaries",
            chart,
            "Columns: C compaction, R restart, H child handoff; required by the record, and "
            "recorded in its trace.",
            table(
                "boundaries",
                "Required and recorded boundaries",
                ("record", "required", "recorded (in order)", "missing boundaries"),
                rows,
            ),
        ),
    )


def _baseline(receipt: ContextReceipt, href: str) -> Section:
    comparison = receipt.comparison
    if comparison is None:
        return Section(
            "baseline",
            "Baseline deltas",
            paragraph("No baseline comparison was made (--baseline not given).", "unknown"),
        )
    head = banner(
        "info" if comparison.comparable else "missing",
        f"baseline {comparison.baseline_path}: "
        + ("comparable" if comparison.comparable else "not comparable"),
        comparison.reasons,
    )
    deltas = comparison.deltas
    if deltas is None:
        return Section("baseline", "Baseline deltas", head)
    totals = {"passes": deltas.passes, **deltas.failures.model_dump(by_alias=True)}
    bars = [
        Bar(
            k,
            float(v),
            f"{v:+d}",
            SIGN_COLOR[(v > 0) - (v < 0)] if k == "passes" else SIGN_COLOR[(v < 0) - (v > 0)],
        )
        for k, v in totals.items()
    ]
    rows: list[list[Cell]] = [
        [
            link(d.record_id, href),
            Value(d.passes, signed=True),
            *(Value(v, signed=True) for v in d.failures.model_dump(by_alias=True).values()),
            Value(d.cost.input_tokens, signed=True),
            Value(d.cost.output_tokens, signed=True),
            Value(d.cost.cost_usd, 4, signed=True),
        ]
        for d in deltas.records
    ]
    totals_row: list[Cell] = [
        "total",
        *(Value(v, signed=True) for v in totals.values()),
        Value(deltas.cost.input_tokens, signed=True),
        Value(deltas.cost.output_tokens, signed=True),
        Value(deltas.cost.cost_usd, 4, signed=True),
    ]
    return Section(
        "baseline",
        "Baseline deltas",
        join(
            [
                head,
                figure(
                    "baseline",
                    bar_chart("Current minus baseline", bars),
                    "Passes and failure-class totals, current run minus baseline (green: better).",
                    table(
                        "baseline",
                        "Deltas per record, current minus baseline",
                        (
                            "record",
                            "passes",
                            *FAILURE_CLASSES,
                            "input tokens",
                            "output tokens",
                            "cost USD",
                        ),
                        [*rows, totals_row],
                    ),
                ),
            ]
        ),
    )


def scan_sections(run: ScanRun) -> list[Section]:
    """The sections of a scan's report."""
    receipt = run.receipt
    if receipt is None:
        return _missing(SCAN_JSON)
    href = run.receipts.href(run.path)
    t = receipt.totals
    state = "negative" if t.repeated_failures or t.refused else "info"
    overview = join(
        [
            banner(
                state,
                f"{t.sessions} sessions: {t.repeated_failures} failed commands run again after a "
                "boundary",
                [
                    f"re-runs that passed: {t.reruns_passed}; with no recorded outcome: "
                    f"{t.reruns_unknown}",
                    f"files refused: {t.refused}",
                ],
            ),
            table(
                "overview",
                "Totals",
                ("what", "value"),
                [
                    ["run id", receipt.run_id],
                    ["sessions", t.sessions],
                    ["compactions", t.compactions],
                    ["restarts", t.restarts],
                    ["handoffs", t.handoffs],
                    ["repeatedFailures", t.repeated_failures],
                    ["rerunsPassed", t.reruns_passed],
                    ["rerunsUnknown", t.reruns_unknown],
                    ["refused", t.refused],
                    ["receipt", link(SCAN_JSON, href)],
                ],
            ),
        ]
    )
    return [
        Section("overview", "Summary", overview),
        _sessions(receipt, href),
        _refused(receipt, href),
    ]


def _session_name(session_id: str | None, files: list[str]) -> str:
    return session_id or (files[0] if files else "unnamed session")


SESSION_HEADERS: Final = (
    "session",
    "agent",
    "models",
    "events",
    "commands",
    "failed commands",
    "compactions",
    "restarts",
    "handoffs",
    "repeatedFailures",
    "rerunsPassed",
    "rerunsUnknown",
    "input tokens",
    "output tokens",
)
RERUN_HEADERS: Final = (
    "session",
    "command",
    "failed at",
    "boundary at",
    "re-run at",
    "turns between",
    "outcome",
)


def _sessions(receipt: ScanReceipt, href: str) -> Section:
    bars: list[Bar] = []
    rows: list[list[Cell]] = []
    reruns: list[list[Cell]] = []
    for s in receipt.sessions:
        name = _session_name(s.session_id, [f.path for f in s.files])
        short = name if len(name) <= 26 else name[:12] + "\u2026" + name[-8:]
        color = NEGATIVE if s.repeated_failures else NEUTRAL
        bars.append(Bar(short, float(s.repeated_failures), str(s.repeated_failures), color))
        rows.append(
            [link(name, href), s.agent, ", ".join(s.models) or None, s.events, s.commands,
             s.failed_commands, s.compactions, s.restarts, s.handoffs, s.repeated_failures,
             s.reruns_passed, s.reruns_unknown, s.input_tokens, s.output_tokens]
        )  # fmt: skip
        reruns += [
            [link(name, href), r.command, r.failed_at, r.boundary_at, r.rerun_at,
             r.turns_between, r.outcome]
            for r in s.reruns
        ]  # fmt: skip
    chart = bar_chart("Failed commands run again after a boundary, per session", bars)
    caption = "A command that failed, then ran again after a compaction, restart or handoff."
    body = [
        figure("sessions", chart, caption, table("sessions", "Per session", SESSION_HEADERS, rows)),
        table("reruns", "Every re-run of a failed command after a boundary", RERUN_HEADERS, reruns),
    ]
    return Section("sessions", "Repeated failed commands per session", join(body))


def _refused(receipt: ScanReceipt, href: str) -> Section:
    rows: list[list[Cell]] = [[r.path, r.reason, link(SCAN_JSON, href)] for r in receipt.refused]
    return Section(
        "refused",
        "Files refused",
        table("refused", "Files the scan could not read", ("file", "reason", "receipt"), rows),
    )


def context_title(run: ContextRun | ScanRun) -> str:
    """A short name for the run."""
    if isinstance(run, ScanRun):
        return "context scan of recorded sessions"
    mode = run.receipt.mode if run.receipt else "unknown mode"
    return f"context evaluation ({mode})"
