"""The ``lorelab`` program: assembles the command groups and maps errors to exit codes.

Each command group lives in its own module and is imported only when it is used, so that
``lorelab --version`` or a hook command does not pay for the MCP SDK or the evaluations.
"""

from __future__ import annotations

import signal
import sys
from typing import Final

import click

from lorelab.cli._common import LazyCommand, LazyGroup
from lorelab.cli._signals import raise_terminated

COMMANDS: Final = {
    "eval": LazyCommand(
        "lorelab.cli.eval:eval_group", "Evaluate whether memory helped, with receipts on disk."
    ),
    # Old spellings, hidden: `eval conditions decide` and `hooks run` (docs/hooks.md).
    "evaluate": LazyCommand(
        "lorelab.cli.eval_conditions_report:evaluate_command",
        "Decide from a four-condition runs file (eval/beta2_runs.json) whether dreaming advances.",
        hidden=True,
    ),
    "hook": LazyCommand(
        "lorelab.cli.hooks:hook_command",
        "Handle one agent hook EVENT: read its JSON on stdin, answer in the agent's format.",
        hidden=True,
    ),
    "hooks": LazyCommand(
        "lorelab.cli.hooks:hooks_group",
        "Install lorelab's memory hooks into Claude Code, Codex CLI or Gemini CLI, and run them.",
    ),
    "mcp": LazyCommand("lorelab.cli.mcp:mcp_command", "Run the lorelab MCP server over stdio."),
    "memory": LazyCommand(
        "lorelab.cli.memory:memory_group",
        "Verified memory for coding agents: record, prepare, promote, start, outcome, dream.",
    ),
    "report": LazyCommand(
        "lorelab.cli.report:report_command",
        "Render an evaluation's receipts as one self-contained HTML page.",
    ),
    "serve": LazyCommand(
        "lorelab.cli.serve:serve_group",
        "Serve the memory over MCP (streamable HTTP) at /mcp, and manage its bearer tokens.",
    ),
    "tests": LazyCommand(
        "lorelab.cli.tests:tests_group",
        "Run test suites, learn lessons from validated tests, and generate new tests.",
    ),
    "worker": LazyCommand(
        "lorelab.cli.worker:worker_group",
        "Workers: external agent processes speaking lorelab.worker/1 on stdin/stdout.",
    ),
}


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from lorelab import __version__

    click.echo(f"lorelab, version {__version__}")
    ctx.exit()


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "-V",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version and exit.",
)
def app() -> None:
    """lorelab: verified memory for coding agents, and evaluations that show whether it helped.

    \b
    Exit codes:
      0    success
      1    the run completed but an outcome failed or a comparison was refused
      2    invalid input or usage, nothing was run
      3    preflight or integrity failure
      70   internal error: a bug in lorelab (its traceback is printed)
      130  interrupted by Ctrl-C (SIGINT); running workers and tests were killed
      143  terminated by SIGTERM; running workers and tests were killed
    """


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
        import traceback  # only a crash pays for it (linecache, tokenize)

        traceback.print_exc()
        sys.exit(EXIT_INTERNAL_ERROR)
