"""The ``lorelab`` program: assembles the command groups and maps errors to exit codes."""

from __future__ import annotations

import signal
import sys
import traceback

import click

from lorelab.cli._common import LorelabGroup, raise_terminated
from lorelab.cli.eval import eval_group
from lorelab.cli.evaluate import evaluate_command
from lorelab.cli.mcp import mcp_command
from lorelab.cli.memory import memory_group
from lorelab.cli.tests import tests_group
from lorelab.cli.worker import worker_group


@click.group(cls=LorelabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lorelab", prog_name="lorelab")
def app() -> None:
    """lorelab: verified memory for coding agents, and evaluations that show whether it helped.

    Exit codes: 0 success; 1 the run completed but an outcome failed or a comparison was
    refused; 2 invalid input or usage, nothing was run; 3 preflight or integrity failure.
    """


app.add_command(eval_group)
app.add_command(evaluate_command)
app.add_command(tests_group)
app.add_command(worker_group)
app.add_command(memory_group)
app.add_command(mcp_command)


EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug, never a judged outcome


def main() -> None:
    """Entry point of the installed ``lorelab`` program.

    A deliberate error (``LorelabError``) is one line and exit 1, 2 or 3 (mapped by the
    groups); anything else is a bug: its traceback is shown and the exit code is 70, so a
    crash can never be mistaken for a failed outcome.
    """
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        app(prog_name="lorelab")
    except Exception:  # the top-level handler: everything below it is a bug
        traceback.print_exc()
        sys.exit(EXIT_INTERNAL_ERROR)
