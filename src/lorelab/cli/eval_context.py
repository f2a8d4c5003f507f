"""``lorelab eval context``: score agent traces across context boundaries, or run trials."""

from __future__ import annotations

from typing import Final

import click
from click.core import ParameterSource

from lorelab.cli._common import LorelabGroup, echo_json, exit_with
from lorelab.cli._options import agent_option, worker_timeout_option
from lorelab.errors import UsageError
from lorelab.evaluation.context import (
    FAILURE_CLASSES,
    RECEIPT_JSON,
    RECEIPT_MARKDOWN,
    EvaluationResult,
    evaluate_fixtures,
    fixture_json_schema,
    run_trials,
)

TRIAL_OPTIONS: Final = {
    "agent": "--agent",
    "boundaries": "--boundary",
    "max_turns": "--max-turns",
    "worker_timeout_s": "--worker-timeout-s",
    "timeout_ms": "--timeout-ms",
    "max_output_bytes": "--max-output-bytes",
    "cwd": "--cwd",
}


class _ContextGroup(LorelabGroup):
    """A group whose default subcommand is ``run``: ``lorelab eval context FIXTURE...`` works."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(name="context", cls=_ContextGroup)
def context_group() -> None:
    """Score agent traces across compaction, restart and child handoff (no provider calls).

    \b
    lorelab eval context FIXTURE... --output DIR [--baseline RECEIPT]
    lorelab eval context --trials --agent NAME_OR_ARGV --output DIR FIXTURE...
    lorelab eval context schema

    `run` is the default subcommand. Exit codes: 0 every record passed and agrees with its
    label (and the baseline, if given, is comparable); 1 a record failed, disagreed with its
    label, or the baseline is not comparable; 2 bad input (nothing written); 3 integrity.
    """


@context_group.command(name="schema")
def schema_command() -> None:
    """Print the JSON Schema of a context fixture (schemaVersion 1)."""
    echo_json(fixture_json_schema())


def _report(result: EvaluationResult) -> None:
    for record in result.receipt.records:
        counts = record.failures.as_dict()
        failing = ", ".join(f"{name} {counts[name]}" for name in FAILURE_CLASSES if counts[name])
        label = "no label" if record.label is None else f"label {record.label}"
        agrees = "" if record.label_agrees is not False else " (DISAGREES with its label)"
        click.echo(
            f"{record.verdict} {record.record_id} [{label}]{agrees}"
            + (f": {failing}" if failing else "")
        )
    comparison = result.receipt.comparison
    if comparison is not None:
        if comparison.comparable and comparison.deltas is not None:
            click.echo(f"baseline comparable: passes {comparison.deltas.passes:+d}")
        else:
            click.echo("baseline NOT comparable, no deltas:")
            for reason in comparison.reasons:
                click.echo(f"  - {reason}")
    click.echo(f"receipts: {result.output / RECEIPT_JSON}, {result.output / RECEIPT_MARKDOWN}")


@context_group.command(name="run")
@click.argument("fixtures", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False),
    help="Fresh receipt directory (must not exist; outside the lorelab source tree and every "
    "fixture's directory).",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False),
    help="A context-receipt.json from an earlier run to compare with.",
)
@click.option(
    "--trials",
    is_flag=True,
    help="Run simulated compaction and restart trials built from the fixtures through a worker.",
)
@agent_option(prefix="Trials only:", adapters=("fixture-context", "claude", "codex", "gemini"))
@click.option(
    "--boundary",
    "boundaries",
    multiple=True,
    type=click.Choice(["compaction", "restart"]),
    help="Trials only: managed boundaries to simulate (default: both).",
)
@click.option(
    "--max-turns",
    type=click.IntRange(1, 20),
    default=4,
    show_default=True,
    help="Trials only: worker calls per trial.",
)
@worker_timeout_option(default_ms=115_000, max_ms=120_000, prefix="Trials only: ")
@click.option(
    "--max-output-bytes",
    type=click.IntRange(1, None),
    default=65_536,
    show_default=True,
    help="Trials only: stdout bound of each worker call.",
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, exists=True),
    help="Trials only: the worker's working directory (default: a fresh empty directory).",
)
def run_command(
    fixtures: tuple[str, ...],
    output: str,
    baseline: str | None,
    trials: bool,
    agent: str | None,
    boundaries: tuple[str, ...],
    max_turns: int,
    timeout_ms: int,
    max_output_bytes: int,
    cwd: str | None,
) -> None:
    """Score FIXTURE files (or run trials from them) and write receipts to --output."""
    if trials:
        if agent is None:
            raise UsageError("--trials needs --agent NAME_OR_ARGV")
        result = run_trials(
            fixtures,
            agent=agent,
            output=output,
            baseline=baseline,
            boundaries=boundaries or ("compaction", "restart"),
            max_turns=max_turns,
            timeout_ms=timeout_ms,
            max_output_bytes=max_output_bytes,
            cwd=cwd,
        )
    else:
        ctx = click.get_current_context()
        given = [
            flag
            for name, flag in TRIAL_OPTIONS.items()
            if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT
        ]
        if given:
            raise UsageError(f"{', '.join(given)} only apply with --trials")
        result = evaluate_fixtures(fixtures, output=output, baseline=baseline)
    _report(result)
    exit_with(result.exit_code)
