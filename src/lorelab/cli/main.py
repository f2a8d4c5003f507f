"""The ``lorelab`` program: assembles the command groups and maps errors to exit codes."""

from __future__ import annotations

import click

from lorelab.cli._common import LorelabGroup
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


def main() -> None:
    """Entry point of the installed ``lorelab`` program."""
    app(prog_name="lorelab")
