"""The readable form of a conditions report: rich tables and the statements that go with them."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lorelab.evaluation.conditions._report import REWORK_SOURCES, ConditionsReport
from lorelab.io import escape_control


def _safe(text: str) -> str:
    """Text from a runs file, printable: control characters escaped, never read as markup."""
    return escape(escape_control(text))


def _safe_join(texts: Iterable[str]) -> str:
    return ", ".join(_safe(text) for text in texts)


def _rate(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.2f}"


def _num(value: float | None, digits: int = 2) -> str:
    return "unknown" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def print_report(report: ConditionsReport, console: Console) -> None:
    """Print ``report`` as tables and short statements."""
    if report.evidence_kind:
        console.print(f"[bold]evidence kind: {report.evidence_kind} (not evidence)[/bold]")
    console.print(
        f"{report.tasks} tasks, {report.runs} runs; holdouts ({report.holdout_source}): "
        f"{_safe_join(report.holdouts)}"
    )
    if report.manifest_sha256:
        state = "checked against --manifest" if report.manifest_checked else "no --manifest given"
        console.print(f"manifest sha256 {report.manifest_sha256} ({state})")
    console.print(f"rework ({report.rework_source}): {REWORK_SOURCES[report.rework_source]}")
    console.print(_conditions_table(report))
    console.print(_paired_table(report))
    _print_tail(report, console)


def _conditions_table(report: ConditionsReport) -> Table:
    table = Table(title="Per condition (all tasks)")
    table.add_column("condition", no_wrap=True)
    for column in ("runs", "memory failures", "pass rate", "rework", "relevant", "tokens"):
        # Headers wrap at a word on a narrow screen; the short figures never need to.
        table.add_column(column, justify="right")
    for row in report.conditions:
        relevance = (
            "n/a"
            if row.condition == "baseline" and row.retrieval_relevance_rate is None
            else _rate(row.retrieval_relevance_rate)
        )
        table.add_row(
            _safe(row.condition),
            str(row.runs),
            str(row.memory_failures),
            _rate(row.pass_rate),
            _num(row.mean_rework),
            relevance,
            _num(row.mean_guidance_tokens, 1),
        )
    return table


def _paired_table(report: ConditionsReport) -> Table:
    paired = Table(title=f"Paired with baseline on the {len(report.holdouts)} holdouts")
    paired.add_column("measure", no_wrap=True)
    for comparison in report.paired:
        paired.add_column(comparison.condition, justify="right", no_wrap=True)
    rows: list[tuple[str, list[str]]] = [
        ("holdouts paired", [str(c.holdouts) for c in report.paired]),
        ("left out: memory failure", [str(len(c.memory_failures)) for c in report.paired]),
        ("pass-rate delta", [_signed(c.pass_rate_delta) for c in report.paired]),
        ("rework delta", [_signed(c.rework_delta) for c in report.paired]),
        ("rework delta, both passed", [_signed(c.rework_delta_both_passed) for c in report.paired]),
        ("negative transfer", [str(len(c.negative_transfer)) for c in report.paired]),
        ("pollution rate", [_rate(c.pollution_rate) for c in report.paired]),
        ("irrelevance rate", [_rate(c.irrelevance_rate) for c in report.paired]),
        (
            "mean guidance tokens",
            [_num(c.token_cost.mean_guidance_tokens, 1) for c in report.paired],
        ),
        (
            "sign test +/-/=",
            [
                f"{c.sign_test.positive}/{c.sign_test.negative}/{c.sign_test.ties}"
                for c in report.paired
            ],
        ),
        ("p (exact, two-sided)", [f"{c.sign_test.p_value:.3g}" for c in report.paired]),
    ]
    for name, values in rows:
        paired.add_row(name, *values)
    return paired


def _print_tail(report: ConditionsReport, console: Console) -> None:
    if report.flagged_runs:
        console.print(f"[bold]flagged runs ({len(report.flagged_runs)}, kept and counted):[/bold]")
        for flagged in report.flagged_runs:
            where = "holdout" if flagged.holdout else "not a holdout"
            console.print(
                f"  - {_safe(flagged.task_id)} x {_safe(flagged.condition)} ({where}): "
                f"{_safe_join(flagged.flags)}"
            )
    decision = report.decision
    console.print(
        f"[bold]decision for {decision.condition}: {decision.verdict}[/bold] "
        f"(thresholds: {decision.thresholds_source})"
    )
    for reason in decision.reasons:
        console.print(f"  - {_safe(reason)}")
    if report.review_required:
        console.print("Skills marked review_required:")
        for skill in report.review_required:
            console.print(
                f"  - {_safe(skill.skill_id)}: {skill.failed_runs} of {skill.runs} runs failed "
                f"({_safe_join(skill.failed_tasks)})"
            )
    console.print(report.power_note)
    console.print("What this protocol cannot prove:")
    for statement in report.cannot_prove:
        console.print(f"  - {statement}")
