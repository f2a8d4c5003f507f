"""What every command group shares: the error-mapping group class, consoles, JSON output."""

from __future__ import annotations

import signal
from typing import Any, NoReturn

import click
from rich.console import Console

from lorelab.errors import LorelabError
from lorelab.io import pretty_json


class Terminated(KeyboardInterrupt):
    """Raised by the SIGTERM handler so a termination unwinds (and cleans up) like Ctrl-C."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(f"terminated by signal {signal_number}")
        self.signal_number = signal_number


def raise_terminated(signal_number: int, _frame: object) -> None:
    """SIGTERM handler: unwind the stack so ``finally`` blocks kill workers and keep receipts."""
    raise Terminated(signal_number)


class LorelabGroup(click.Group):
    """A click group whose invocation maps :class:`LorelabError` to one line and an exit code.

    Because the mapping lives in ``invoke``, the installed ``lorelab`` program and click's
    ``CliRunner`` behave the same. Anything that is not a ``LorelabError`` keeps its traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LorelabError as exc:
            click.echo(f"lorelab: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            # Ctrl-C or SIGTERM: cleanup already ran on the way up; say so and use the
            # shell's convention (128 + signal), never an outcome's exit code.
            number = exc.signal_number if isinstance(exc, Terminated) else signal.SIGINT
            click.echo(f"lorelab: interrupted by {signal.Signals(number).name}", err=True)
            ctx.exit(128 + number)


def stdout_console() -> Console:
    """A rich console on stdout (plain text when stdout is not a terminal)."""
    return Console(highlight=False, soft_wrap=True)


def stderr_console() -> Console:
    """A rich console on stderr, for progress and status."""
    return Console(stderr=True, highlight=False)


def echo_json(obj: Any) -> None:
    """Print a JSON value or pydantic model as indented JSON on stdout."""
    click.echo(pretty_json(obj), nl=False)


def exit_with(code: int) -> NoReturn:
    """End the command with ``code`` after its output was printed."""
    raise click.exceptions.Exit(code)
