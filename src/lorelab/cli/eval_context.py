"""``lorelab eval context run|import|scan|schema``: score agent traces across context
boundaries, or run trials."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

import click
from click.core import ParameterSource
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from lorelab._model import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS
from lorelab.cli._common import DefaultRunGroup, echo_json, exit_with, stderr_console
from lorelab.cli._options import agent_option, max_output_bytes_option, worker_timeout_option
from lorelab.errors import UsageError
from lorelab.evaluation.context import (
    AGENTS,
    FAILURE_CLASSES,
    RECEIPT_JSON,
    RECEIPT_MARKDOWN,
    SCAN_JSON,
    SCAN_MARKDOWN,
    SESSION_CEILING,
    SESSION_LIMIT,
    Agent,
    EvaluationResult,
    ScanResult,
    evaluate_fixtures,
    fixture_json_schema,
    import_session,
    run_trials,
    scan_sessions,
)
from lorelab.workers.roles import MAX_TIMEOUT_MS
from lorelab.workers.transport import WorkerBounds

TRIAL_OPTIONS: Final = {
    "agent": "--agent",
    "boundaries": "--boundary",
    "max_turns": "--max-turns",
    "worker_timeout_s": "--worker-timeout-s",
    "timeout_ms": "--timeout-ms",
    "max_output_bytes": "--max-output-bytes",
    "cwd": "--cwd",
}


# `lorelab eval context FIXTURE...`, the spelling before `run`, still runs it (hidden).
@click.group(name="context", cls=DefaultRunGroup, positional_run=True)
def context_group() -> None:
    """Score agent traces across compaction, restart and child handoff (no provider calls).

    \b
    lorelab eval context run FIXTURE... --output DIR [--baseline RECEIPT]
    lorelab eval context run --trials --agent NAME_OR_ARGV --output DIR FIXTURE...
    lorelab eval context import --from claude-code|codex FILE... --output FIXTURE.json
    lorelab eval context scan PATH... [--json] [--output DIR]
    lorelab eval context schema

    Exit codes of `run`: 0 every record passed (and agrees with its
    label; the baseline, if given, is comparable); 1 a record failed, disagreed with its label,
    or the baseline is not comparable (a FAIL is exit 1 even when its label expects FAIL);
    2 bad input (nothing written); 3 integrity.
    """


@context_group.command(name="schema")
def schema_command() -> None:
    """Print the JSON Schema of a context fixture (schemaVersion 1)."""
    echo_json(fixture_json_schema())


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _report(result: EvaluationResult) -> None:
    for record in result.receipt.records:
        counts = record.failures.as_dict()
        failing = ", ".join(f"{name} {counts[name]}" for name in FAILURE_CLASSES if counts[name])
        label = "no label" if record.label is None else f"label {record.label}"
        if not record.facts_scored:
            label = "unlabelled: facts not scored"
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
    summary = result.receipt.summary
    labelled = [r for r in result.receipt.records if r.label is not None]
    agreement = ""
    if labelled:
        agreement = (
            "; every verdict agrees with its label"
            if summary.label_disagreements == 0
            else f"; {_count(summary.label_disagreements, 'verdict')} DISAGREE with the label"
        )
    why = ""
    if result.exit_code == 1 and summary.failures:
        why = f"; exit 1 because {_count(summary.failures, 'record')} FAIL"
    records = _count(summary.records, "record")
    click.echo(f"{records}: {summary.passes} PASS, {summary.failures} FAIL{agreement}{why}")
    click.echo(f"receipts: {result.output / RECEIPT_JSON}, {result.output / RECEIPT_MARKDOWN}")


@context_group.command(name="run")
@click.argument("fixtures", nargs=-1, required=True, type=click.Path())
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False),
    help="Fresh receipt directory (must not exist; outside the lorelab package and every "
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
@worker_timeout_option(default_ms=DEFAULT_TIMEOUT_MS, max_ms=MAX_TIMEOUT_MS, prefix="Trials only: ")
@max_output_bytes_option(
    default=DEFAULT_MAX_OUTPUT_BYTES,
    help_text="Trials only: stdout bound of each worker call.",
    bounds=(1, None),
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
            bounds=WorkerBounds(timeout_ms, max_output_bytes),
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


_FROM = click.Choice(list(AGENTS))
_MAX_BYTES = click.option(
    "--max-bytes",
    type=click.IntRange(1, SESSION_CEILING),
    default=SESSION_LIMIT,
    show_default=True,
    help=f"Read bound of one session file (at most {SESSION_CEILING} bytes, 1 GiB).",
)


@context_group.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option(
    "--from", "agent", required=True, type=_FROM, help="The agent that wrote the session."
)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False),
    help="The fixture file to write (must not exist).",
)
@_MAX_BYTES
@click.option("--synthetic", is_flag=True, help="Mark the session as made up, not recorded.")
def import_command(
    files: tuple[str, ...], agent: str, output: str, max_bytes: int, synthetic: bool
) -> None:
    """Convert a recorded session (FILE..., one session) into an unlabelled fixture.

    Claude Code sessions live in ~/.claude/projects/<project>/*.jsonl, Codex rollouts in
    ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl. Give several files of one session (a resumed
    session continued in a new file) in any order. Texts and commands are redacted.
    """
    result = import_session(
        files,
        agent="codex" if agent == "codex" else "claude-code",
        output=output,
        max_bytes=max_bytes,
        synthetic=synthetic,
    )
    fixture = result.fixture
    kinds = [e.boundary for e in fixture.trace if e.kind == "boundary"]
    unknown = fixture.provenance.unknown_event_types
    click.echo(
        f"{result.output}: session {fixture.id}, {len(fixture.trace)} top-level events, "
        f"boundaries [{', '.join(kinds)}], "
        f"{_count(len(fixture.forbidden_commands), 'proposed forbidden command')}; "
        "unlabelled (expected facts empty)"
    )
    if unknown:
        named = ", ".join(f"{name} x{count}" for name, count in unknown.items())
        click.echo(f"unknown event types (counted, not read): {named}")


@contextmanager
def _progress() -> Iterator[tuple[Callable[[int], None], Callable[[str], None]]]:
    """Progress callbacks: a bar on stderr when stdout is a terminal, nothing otherwise."""
    if not sys.stdout.isatty():
        yield (lambda _total: None), (lambda _path: None)
        return
    bar = Progress(
        TextColumn("scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        console=stderr_console(),
        transient=True,
    )
    task = bar.add_task("scan", total=None)
    with bar:
        yield (
            lambda total: bar.update(task, total=total),
            lambda _path: bar.advance(task),
        )


_TURNS_SHOWN: Final = 5


def _scan_table(result: ScanResult) -> None:
    receipt = result.receipt
    header = ("session", "agent", "compactions", "restarts", "handoffs", "repeatedFailures",
              "rerunsPassed", "turnsBetween")  # fmt: skip
    rows: list[tuple[str, ...]] = []
    for r in receipt.sessions:
        shown = [str(x.turns_between) for x in r.reruns[:_TURNS_SHOWN]]
        more = len(r.reruns) - _TURNS_SHOWN
        turns = ",".join(shown) + (f",... (+{more})" if more > 0 else "") if shown else "-"
        rows.append(
            (r.session_id or r.files[0].path, r.agent, str(r.compactions), str(r.restarts),
             str(r.handoffs), str(r.repeated_failures), str(r.reruns_passed), turns)
        )  # fmt: skip
    t = receipt.totals
    rows.append(
        (f"total ({t.sessions} sessions)", "", str(t.compactions), str(t.restarts),
         str(t.handoffs), str(t.repeated_failures), str(t.reruns_passed), "")
    )  # fmt: skip
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        click.echo("  ".join(cells).rstrip())
    for refused in receipt.refused:
        click.echo(f"refused: {refused.reason}")
    if result.output is not None:
        click.echo(f"receipts: {result.output / SCAN_JSON}, {result.output / SCAN_MARKDOWN}")


@context_group.command(name="scan")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--from",
    "agent",
    type=click.Choice(["auto", *AGENTS]),
    default="auto",
    show_default=True,
    help="The session format; auto detects it per file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the scan as JSON.")
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False),
    help="Fresh receipt directory (must not exist; outside the scanned directories).",
)
@_MAX_BYTES
def scan_command(
    paths: tuple[str, ...], agent: str, as_json: bool, output: str | None, max_bytes: int
) -> None:
    """Count boundaries and failed commands run again after them, per session.

    PATH is a session file, a fixture (.json), or a directory such as ~/.claude/projects or
    ~/.codex/sessions (every *.jsonl below it). A re-run of a command that failed before a
    boundary is a repeatedFailure when it fails again, a rerunPassed when it passes. Exit 0 when
    no session repeated a failure and every file was read; 1 otherwise; 2 bad usage.
    """
    chosen: Agent | None = None
    if agent != "auto":
        chosen = "codex" if agent == "codex" else "claude-code"
    with _progress() as (on_files, on_file):
        result = scan_sessions(
            paths,
            agent=chosen,
            output=output,
            max_bytes=max_bytes,
            progress=on_file,
            on_files=on_files,
        )
    if as_json:
        echo_json(result.receipt)
    else:
        _scan_table(result)
    if result.exit_code == 1 and not as_json:
        # --json carries the totals that say why; a person gets them in one line.
        click.echo(f"lorelab: {_scan_failed(result)}", err=True)
    exit_with(result.exit_code)


def _scan_failed(result: ScanResult) -> str:
    """Why a scan exits 1, in one line: sessions that repeated a failure, files refused."""
    totals = result.receipt.totals
    reasons: list[str] = []
    if totals.repeated_failures:
        sessions = sum(1 for row in result.receipt.sessions if row.repeated_failures)
        reasons.append(
            f"{sessions} of {totals.sessions} sessions re-ran a command that had failed before a "
            f"boundary, and it failed again ({totals.repeated_failures} repeated failures)"
        )
    if totals.refused:
        reasons.append(f"{totals.refused} files could not be read (see refused in the receipt)")
    return "; ".join(reasons)
