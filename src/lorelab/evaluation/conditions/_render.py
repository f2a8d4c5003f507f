"""The readable form of a conditions report: rich tables and the statements that go with them."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from lorelab.evaluation.conditions._evaluate import ConditionsReport


def _rate(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.2f}"


def _num(value: float | None, digits: int = 2) -> str:
    return "unknown" if value is None else f"{value:.{digits}f}"


def print_report(report: ConditionsReport, console: Console) -> None:
    """Print ``report`` as tables and short statements."""
    if report.evidence_kind:
        console.print(f"[bold]evidence kind: {report.evidence_kind} (not evidence)[/bold]")
    console.print(
        f"{report.tasks} tasks, {report.runs} runs; holdouts ({report.holdout_source}): "
        f"{', '.join(report.holdouts)}"
    )
    table = Table(title="Per condition (all tasks)")
    for column in ("condition", "runs", "pass rate", "mean rework", "relevance", "guidance tok"):
        table.add_column(column, justify="left" if column == "condition" else "right")
    for row in report.conditions:
        table.add_row(
            row.condition,
            str(row.runs),
            _rate(row.pass_rate),
            _num(row.mean_rework),
            _rate(row.retrieval_relevance_rate),
            _num(row.mean_guidance_tokens, 1),
        )
    console.print(table)
    paired = Table(title="Paired with baseline on the holdouts")
    for column in (
        "condition",
        "pass delta",
        "rework delta",
        "neg. transfer",
        "pollution",
        "irrelevance",
        "mean tokens",
        "sign test (+/-/=)",
        "p",
    ):
        paired.add_column(column, justify="left" if column == "condition" else "right")
    for comparison in report.paired:
        test = comparison.sign_test
        paired.add_row(
            comparison.condition,
            f"{comparison.pass_rate_delta:+.2f}",
            f"{comparison.rework_delta:+.2f}",
            str(len(comparison.negative_transfer)),
            _rate(comparison.pollution_rate),
            _rate(comparison.irrelevance_rate),
            _num(comparison.token_cost.mean_guidance_tokens, 1),
            f"{test.positive}/{test.negative}/{test.ties}",
            f"{test.p_value:.4g}",
        )
    console.print(paired)
    decision = report.decision
    console.print(
        f"[bold]decision for {decision.condition}: {decision.verdict}[/bold] "
        f"(thresholds: {decision.thresholds_source})"
    )
    for reason in decision.reasons:
        console.print(f"  - {reason}")
    if report.review_required:
        console.print("Skills marked review_required:")
        for skill in report.review_required:
            console.print(
                f"  - {skill.skill_id}: {skill.failed_runs} of {skill.runs} runs failed "
                f"({', '.join(skill.failed_tasks)})"
            )
    console.print(report.power_note)
    console.print("What this protocol cannot prove:")
    for statement in report.cannot_prove:
        console.print(f"  - {statement}")
