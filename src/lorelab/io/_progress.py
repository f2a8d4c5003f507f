"""Progress bars for long commands: drawn on stderr when the user is at a terminal, silent
otherwise, so piped or captured output never holds control sequences or bar frames."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Protocol


class Tick(Protocol):
    """Advance a bar by one unit, optionally saying what just finished."""

    def __call__(self, label: str | None = None) -> None: ...


def no_progress(label: str | None = None) -> None:
    """A tick that shows nothing: the default where no bar is wanted."""


def at_terminal(stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> bool:
    """Whether both stdout and stderr are terminals (the bar is drawn on stderr)."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    return bool(out is not None and out.isatty() and err is not None and err.isatty())


@contextmanager
def progress_bar(
    description: str,
    total: int | None,
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> Iterator[Tick]:
    """A bar of ``total`` units titled ``description``; yields the function that advances it.

    Nothing at all is written unless stdout and stderr are both terminals; the bar disappears
    when the block ends, so it never mixes with the command's own output.
    """
    if not at_terminal(stdout, stderr):
        yield no_progress
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(file=stderr if stderr is not None else sys.stderr, highlight=False)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)

        def tick(label: str | None = None) -> None:
            text = description if label is None else f"{description}: {label}"[:70]
            bar.update(task, advance=1, description=text)

        yield tick
