"""``lorelab eval conditions decide``: report on a four-condition runs file and decide.

``lorelab evaluate``, the name the four-condition protocol documents, is the same command
under its old spelling: hidden from help, kept working. So is ``eval conditions report``
(after a deprecation line): ``report`` is ``lorelab report``, the HTML page. It is its own
module so that any spelling imports neither the runner nor the executors.
"""

from __future__ import annotations

from pathlib import Path

import click

from lorelab.cli._common import (
    deprecated_alias,
    echo_json,
    exit_with,
    hidden_alias,
    stdout_console,
)
from lorelab.cli._options import file_option, json_option
from lorelab.errors import UsageError


@click.command(
    name="decide",
    short_help="Decide from a four-condition runs file (eval/beta2_runs.json) whether dreaming "
    "advances.",
)
@file_option(
    "--input",
    "input_path",
    required=True,
    help_text='The runs file: {"runs": [{task_id, condition, passed, rework_count, ...}]}.',
)
@file_option(
    "--manifest",
    "manifest_path",
    help_text="The conditions manifest: holdouts and decision thresholds come from it.",
)
@click.option(
    "--holdouts",
    "holdouts",
    default=None,
    metavar="ID,...",
    help="The holdout task ids, comma-separated, for a runs file without holdout flags.",
)
@json_option("Print the report as JSON.")
def report_command(
    input_path: Path, manifest_path: Path | None, holdouts: str | None, as_json: bool
) -> None:
    """Report per condition, pair each memory condition with baseline on the holdouts, and
    decide whether dreaming advances (advance, do-not-advance, inconclusive; or invalid,
    incomplete and insufficient when the runs cannot decide it).

    Without --manifest the holdouts are those --holdouts names, else the tasks whose runs say
    "holdout": true; when none of these says it every task is paired and the decision is
    insufficient (holdouts unknown). A runs file without dreaming runs (as MemCoder's own
    evaluation writes) is reported on the other three conditions, decision incomplete. The
    default thresholds apply, except that a runs file recording the manifest it was made
    under needs that --manifest (the decision is inconclusive without it, and a manifest with
    other bytes is refused).

    A run whose memory call failed is left out of every comparison and makes the decision
    invalid. Without --manifest, fewer than 10 tasks or 6 holdouts make it insufficient.

    Exit codes: 0 when a report is produced with the decision advance, do-not-advance or
    inconclusive; 1 when it is produced with the decision invalid, incomplete or
    insufficient; 2 for --holdouts with --manifest, a --holdouts naming a task without runs, a
    runs file missing task x condition pairs (other than all of dreaming), repeated or
    malformed, a baseline run that saw memory, or a manifest that is not the one the runs
    were made under.
    """
    from lorelab.evaluation.conditions import evaluate_file, print_report

    named = None
    if holdouts is not None:
        named = [task.strip() for task in holdouts.split(",") if task.strip()]
        if not named:
            raise UsageError(f"--holdouts {holdouts!r}: names no task id")
    report = evaluate_file(input_path, manifest_path, named)
    if as_json:
        echo_json(report)
    else:
        print_report(report, stdout_console())
    exit_with(report.exit_code())


evaluate_command = hidden_alias(report_command)
"""``lorelab evaluate``: the old spelling of ``lorelab eval conditions decide``."""

old_report_command = deprecated_alias(
    report_command, "lorelab eval conditions report", "lorelab eval conditions decide"
)
"""``lorelab eval conditions report``: the old spelling, kept working with a deprecation line."""
