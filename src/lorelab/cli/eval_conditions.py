"""``lorelab eval conditions``: the four-condition protocol's schema, runner and finalize."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from lorelab.cli._common import LorelabGroup, echo_json, exit_with
from lorelab.cli._executor_options import executor_options
from lorelab.cli._options import (
    allow_unsandboxed_option,
    endpoint_options,
    file_option,
    home_option,
    identity_option,
    json_option,
    old_option,
    output_option,
    quiet_option,
)
from lorelab.cli.eval_conditions_report import old_report_command, report_command
from lorelab.errors import UsageError
from lorelab.evaluation.conditions import (
    RUNS_FILE,
    RunOptions,
    finalize_conditions,
    manifest_schema,
    run_conditions,
)
from lorelab.evaluation.executors import make_executor
from lorelab.io import loads_strict
from lorelab.workers import EndpointOptions


@click.group(name="conditions", cls=LorelabGroup)
def conditions_group() -> None:
    """The four-condition protocol: baseline, memory_guided, skill_planned, dreaming.

    \b
    lorelab eval conditions run --manifest FILE --host NAME_OR_ARGV --output DIR [...]
    lorelab eval conditions decide --input RUNS.json [--manifest FILE]
    lorelab eval conditions finalize --output DIR
    lorelab eval conditions schema
    """


conditions_group.add_command(report_command)
conditions_group.add_command(old_report_command, "report")


@conditions_group.command(name="schema")
def schema_command() -> None:
    """Print the JSON Schema of the conditions manifest (eval/conditions.json)."""
    echo_json(manifest_schema())


def _json_argv(text: str | None) -> list[str] | None:
    if text is None:
        return None
    value = loads_strict(text.encode("utf-8"), "--memory-argv")
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise UsageError("--memory-argv must be a non-empty JSON array of strings")
    return value


@conditions_group.command(name="run")
@file_option(
    "--manifest",
    "manifest_path",
    required=True,
    help_text="The conditions manifest (eval/conditions.json).",
)
@click.option(
    "--host",
    required=True,
    help="A shipped adapter name (claude, codex, gemini, openai, fixture-host) or a JSON argv "
    "array.",
)
@output_option(
    required=True, help_text="A new directory for the receipts and the runs file (must not exist)."
)
@home_option("Memory home under test (lorelab profile): the store is HOME/memory.db.")
@old_option("--memory-home", "--home", "home", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--memory-argv",
    default=None,
    help="JSON argv that starts the memory's MCP server on stdio (overrides the profile's).",
)
@file_option(
    "--seed-memory",
    help_text="Record these seed experiences and promote their Skill before the lock "
    "(fresh memory).",
)
@identity_option("Operator identity text bound into receipts.")
@click.option(
    "--verify-timeout-s",
    type=click.FloatRange(min=1, max=3600),
    default=300.0,
    show_default=True,
    help="Timeout of each verify command.",
)
@executor_options("task x condition runs")
@endpoint_options()
@allow_unsandboxed_option()
@json_option("Print the run summary as JSON.")
@quiet_option()
def run_command(
    manifest_path: Path,
    host: str,
    output: Path,
    home: Path | None,
    memory_argv: str | None,
    seed_memory: Path | None,
    operator_identity: str | None,
    verify_timeout_s: float,
    jobs: int,
    executor: str,
    ray_address: str | None,
    endpoint: EndpointOptions,
    allow_unsandboxed: bool,
    as_json: bool,
) -> None:
    """Run every task under baseline, memory_guided, skill_planned and dreaming.

    Writes receipts and beta2_runs.json (read it with `lorelab eval conditions decide --input`). The
    evaluation lock stays active until `lorelab eval conditions finalize`. Exit 0 when every
    run completed (a task the host did not solve is a measured outcome); 1 when any run could
    not complete as declared: a host call failed, a memory operation failed, or the host
    claimed another model than host.model (all kept in the record); 2 for bad input, nothing
    run (also: no working sandbox for the verify commands, unless --allow-unsandboxed); 3 for a
    preflight failure (memory unreachable, seeds not as declared, holdouts
    already in memory, lock refused) or a changed host identity; 130/143 when interrupted
    (Ctrl-C/SIGTERM: the host is killed, aborted.json written, finalize clears the lock).

    With --jobs N or --executor ray the runs of each phase run side by side; the memory is
    asked for every run's guidance first, in sequential order, and stays with this process.
    A run whose worker process or node died is recorded as executor-failure (exit 1).
    """
    argv = _json_argv(memory_argv)
    runs_on = make_executor(jobs, executor, ray_address)
    try:
        summary = run_conditions(
            RunOptions(
                manifest_path=manifest_path,
                host=host,
                output=output,
                memory_home=home,
                memory_argv=argv,
                seed_memory=seed_memory,
                identity=operator_identity,
                verify_timeout_s=verify_timeout_s,
                executor=runs_on,
                endpoint=endpoint,
                allow_unsandboxed=allow_unsandboxed,
            )
        )
    finally:
        runs_on.close()
    result = {
        "output": str(summary.output),
        "runs": summary.runs,
        "passed": summary.passed,
        "hostFailures": summary.host_failures,
        "memoryFailures": summary.memory_failures,
        "modelMismatches": summary.model_mismatches,
        "flaggedRuns": summary.flagged_runs,
        "identityChanges": summary.identity_changes,
        "executorFailures": summary.executor_failures,
        "evidenceKind": summary.evidence_kind,
        "runsFile": str(summary.output / RUNS_FILE),
    }
    if as_json:
        echo_json(result)
    else:
        label = f" [{summary.evidence_kind}: not evidence]" if summary.evidence_kind else ""
        click.echo(
            f"{summary.runs} runs, {summary.passed} passed, {summary.host_failures} host call "
            f"failure(s), {summary.memory_failures} memory failure(s), "
            f"{summary.model_mismatches} model mismatch(es), {summary.executor_failures} executor "
            f"failure(s), {summary.flagged_runs} flagged "
            f"run(s){label}; receipts in {summary.output}"
        )
        click.echo(
            f"next: lorelab eval conditions decide --input {shlex.quote(str(result['runsFile']))} "
            f"--manifest {shlex.quote(str(manifest_path))}"
        )
    exit_with(summary.exit_code)


@conditions_group.command(name="finalize")
@click.option(
    "--output",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The directory a conditions run wrote.",
)
@json_option("Print the summary as JSON.")
def finalize_command(output: Path, as_json: bool) -> None:
    """Clear the evaluation lock and record the memory-condition outcomes (with plan and Skill
    ids) so audits and Skill health update.

    Each step is journaled in DIR/finalize-journal/, so an interrupted finalize can be run
    again and picks up where it stopped; finalize.json is written once at the end, after
    which finalize is refused. Exit 0 when everything was recorded, 1 when the memory refused
    some writes (listed in finalize.json), 2 for a directory that is not a finished run or
    is already finalized, 3 when the memory cannot be reached or the lock cleared."""
    summary = finalize_conditions(output)
    result = {
        "output": str(summary.output),
        "status": summary.status,
        "recorded": summary.recorded,
        "outcomes": summary.outcomes,
        "skipped": summary.skipped,
        "errors": summary.errors,
        "resumed": summary.resumed,
    }
    if as_json:
        echo_json(result)
    else:
        click.echo(
            f"{summary.status}: {summary.recorded} outcome(s) recorded, {summary.outcomes} plan "
            f"outcome(s) reported, {summary.skipped} skipped, {summary.errors} error(s)"
        )
    exit_with(summary.exit_code)
