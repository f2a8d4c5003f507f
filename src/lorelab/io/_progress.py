"""Progress of long commands on stderr: a bar when the user is at a terminal, otherwise one line
per finished unit (a trial, a run), so a log or CI shows the run moving; nothing when quiet."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, Protocol

from lorelab.io._text import escape_control

_QUIET: ContextVar[bool] = ContextVar("lorelab_quiet_progress", default=False)


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
def quiet_progress(quiet: bool = True) -> Iterator[None]:
    """Within the block, :func:`progress_bar` shows nothing (a command's ``--quiet``)."""
    token = _QUIET.set(quiet)
    try:
        yield
    finally:
        _QUIET.reset(token)


def _seconds(elapsed: float) -> str:
    return f"{elapsed:.1f} s"


@contextmanager
def progress_bar(
    description: str,
    total: int | None,
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> Iterator[Tick]:
    """Progress of ``total`` units titled ``description``; yields the function that advances it.

    At a terminal (stdout and stderr both), a bar on stderr that disappears when the block
    ends, so it never mixes with the command's own output. Otherwise one plain line on stderr
    per unit, ``description 3/40: what finished (12.3 s)``, with no control sequences. Inside
    :func:`quiet_progress`, nothing at all.
    """
    if _QUIET.get():
        yield no_progress
        return
    err = stderr if stderr is not None else sys.stderr
    if not at_terminal(stdout, stderr):
        started = time.monotonic()
        done = 0

        def line(label: str | None = None) -> None:
            nonlocal done
            done += 1
            count = f"{done}/{total}" if total is not None else str(done)
            what = f": {escape_control(label)}" if label else ""
            elapsed = _seconds(time.monotonic() - started)
            err.write(f"{description} {count}{what} ({elapsed})\n")
            err.flush()

        yield line
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(file=err, highlight=False)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)

        def tick(label: str | None = None) -> None:
            text = description if label is None else f"{description}: {label}"[:70]
            bar.update(task, advance=1, description=text)

        yield tick
