"""``lorelab tests``: run a project's test suite repeatedly and report stability (``run``)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from lorelab.cli._common import (
    LorelabGroup,
    echo_json,
    exit_with,
    stderr_console,
    stdout_console,
)
from lorelab.cli.testgen import generate_command, learn_command, lessons_group
from lorelab.errors import UsageError
from lorelab.io import probe_sandbox
from lorelab.runners import SuiteCheck, check_suite

_TAIL_LINES = 20


@click.group(name="tests", cls=LorelabGroup)
def tests_group() -> None:
    """Run test suites, learn lessons from validated tests, and generate new tests."""


tests_group.add_command(learn_command)
tests_group.add_command(lessons_group)
tests_group.add_command(generate_command)


def _print_table(path: Path, check: SuiteCheck) -> None:
    report = check.report
    console = stdout_console()

    def say(text: str) -> None:
        # Case ids and output hold brackets and colons: never read them as markup or emoji.
        console.print(text, markup=False, emoji=False)

    table = Table(title=Text(f"{path} ({report.runner})"))
    for column in ("run", "classification", "exit", "ms", "passed", "failed", "error", "skipped"):
        table.add_column(column, justify="left" if column == "classification" else "right")
    for number, run in enumerate(report.runs, start=1):
        counts = dict.fromkeys(("passed", "failed", "error", "skipped"), 0)
        for case in run.cases:
            counts[case.status] += 1
        table.add_row(
            str(number),
            run.classification,
            "killed" if run.exit_code is None else str(run.exit_code),
            str(run.duration_ms),
            *(str(counts[status]) for status in ("passed", "failed", "error", "skipped")),
        )
    console.print(table)
    say(f"classification: {report.classification}")
    say(f"stable: {'yes' if report.stable else 'no'}")
    say(f"reason (run 1): {report.runs[0].reason}")
    if report.first_difference:
        say(f"first difference: {report.first_difference}")
    if report.flaky_cases:
        say("flaky cases:")
        for case_id in report.flaky_cases:
            say(f"  {case_id}")
    if not check.ok:
        # Show what the first run that went wrong printed: that is where the diagnosis is.
        bad = next(
            (run for run in check.stability.runs if run.classification != "passed"),
            check.stability.runs[0],
        )
        number = check.stability.runs.index(bad) + 1
        lines = bad.output_tail.rstrip().splitlines()[-_TAIL_LINES:]
        say(f"last lines of run {number}'s output:")
        for line in lines:
            say(f"  {line}")


@tests_group.command(name="run")
@click.argument("path", type=click.Path())
@click.option(
    "--runner",
    type=click.Choice(["pytest", "node"]),
    default=None,
    help=(
        "Runner to use. Default: node if PATH has package.json or a file node --test would "
        "run (*.test.js, *.test.mjs, test/*.js, ...), else pytest."
    ),
)
@click.option(
    "--stability-runs",
    type=int,
    default=3,
    show_default=True,
    help="How many times to run the suite (2 to 5).",
)
@click.option(
    "--timeout-s",
    type=float,
    default=120.0,
    show_default=True,
    help="Timeout of each run in seconds; the whole process group is killed at it.",
)
@click.option(
    "--sandbox",
    is_flag=True,
    help=(
        "Run the suite in bubblewrap: writes only to PATH and a private /tmp, no network, its "
        "own PID namespace, as far as this machine allows (the report's sandbox field says what "
        "it got). Without it, runs are still contained: nothing a test starts survives the run."
    ),
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def run_command(
    path: str,
    runner: str | None,
    stability_runs: int,
    timeout_s: float,
    sandbox: bool,
    as_json: bool,
) -> None:
    """Run the test suite at PATH several times and report classification and flaky cases.

    The suite runs in place; lorelab writes its reports outside PATH. Exit codes: 0 stable
    and passing; 1 unstable, failing, broken or empty; 2 invalid input; 130/143 interrupted
    (the running tests are killed).
    """
    if not path:
        # Path("") means the current directory: an empty argument is a mistake, not a choice.
        raise UsageError("PATH is empty; name the project directory (. for the current one)")
    check = check_suite(
        Path(path), runner=runner, runs=stability_runs, timeout_s=timeout_s, sandbox=sandbox
    )
    stderr_console().print(
        f"lorelab: runner {check.report.runner} ({check.report.runner_chosen_by})",
        markup=False,
    )
    if sandbox and check.report.sandbox != "bubblewrap":
        stderr_console().print(
            f"lorelab: --sandbox: this machine allowed only {check.report.sandbox!r} "
            f"({probe_sandbox().detail}); see docs/security.md",
            markup=False,
        )
    if as_json:
        echo_json(check.report)
    else:
        _print_table(Path(path), check)
    exit_with(0 if check.ok else 1)
