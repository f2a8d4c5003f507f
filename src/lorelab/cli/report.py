"""``lorelab report``: one self-contained HTML page from an evaluation's output directory."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import click

from lorelab.cli._common import exit_with
from lorelab.cli._options import file_option


@click.command(
    name="report",
    short_help="Render an evaluation's receipts as one self-contained HTML page.",
)
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@click.argument("other", metavar="[DIR2]", required=False, type=click.Path(path_type=Path))
@file_option(
    "--output",
    "output",
    help_text="The HTML file to write (replaced if it exists). Default: report.html in DIRECTORY "
    "(report-side-by-side.html for two).",
)
@click.option("--open", "open_page", is_flag=True, help="Open the page in a web browser.")
def report_command(
    directory: Path, other: Path | None, output: Path | None, open_page: bool
) -> None:
    """Render DIR, the output of `lorelab eval learning run`, `eval conditions run` or `eval
    context run` (or `eval context scan`), as one HTML file that needs nothing from the network.

    With DIR2, a second output directory of the same kind, both are shown side by side
    under that evaluation's comparability rule, and the page says why when they are not
    comparable. Figures are inline SVG, each with a table of the same numbers; every row
    links to its receipt by a path relative to the page.

    Exit codes: 0 when the page was written from complete directories; 1 when it was written
    but a directory is partial (an aborted run, a missing or malformed receipt: the page says
    what is missing) or the two are not comparable; 2 when DIRECTORY is missing, not an
    evaluation's output, of another kind than OTHER, or the page cannot be written.
    """
    from lorelab.report import build_report

    report = build_report([directory, *([other] if other is not None else [])], output)
    click.echo(str(report.path))
    for problem in report.problems:
        click.echo(f"lorelab: incomplete: {problem}", err=True)
    verdict = report.comparability
    if verdict is not None and not verdict.comparable:
        click.echo(f"lorelab: not comparable: {'; '.join(verdict.reasons)}", err=True)
    if open_page:
        _open(report.path)
    exit_with(report.exit_code)


def _open(path: Path) -> None:
    try:
        opened = webbrowser.open(path.resolve().as_uri())
    except webbrowser.Error:
        opened = False
    if not opened:
        click.echo(f"lorelab: no web browser could be started; open {path} yourself", err=True)
