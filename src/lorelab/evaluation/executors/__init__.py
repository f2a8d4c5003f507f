"""Where an evaluation's trials run: one small interface, so controllers never change with it.

A controller hands an executor its units (scheduled trials) in run order, a function that
executes one unit and returns its record, and a callback called with each record the moment
its unit ends (it writes the receipt; returning ``False`` stops the run: no further unit
starts). The executor returns the records of the units that ran, in run order.

The contract every executor keeps, whatever it runs on:

- each unit is executed exactly once, never retried, resumed or relabelled;
- ``done`` is called in the caller's thread, once per executed unit, so receipts are written
  by one writer;
- calls to one worker stay sequential (a pool runs different units side by side, never two
  calls of one unit), so latency is not confounded;
- after ``done`` returns ``False`` no new unit starts; units already running finish and are
  reported before ``run`` returns;
- an exception from ``execute`` or ``done`` (an interrupt included) propagates unchanged
  once running units are stopped.

Only :class:`SequentialExecutor` exists today. A local-pool or Ray executor implements the
same :class:`TrialExecutor` protocol; the four-condition runner keeps its runs in one
sequence by design (its memory server and Dream step are shared, ordered state).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

Unit = TypeVar("Unit")
Result = TypeVar("Result")


class TrialExecutor(Protocol):
    """Runs units and reports each result as it ends (see the module docstring)."""

    def run(
        self,
        units: Sequence[Unit],
        execute: Callable[[Unit], Result],
        done: Callable[[Unit, Result], bool],
    ) -> list[Result]:
        """Execute ``units``; call ``done`` with each result; stop when it returns False."""
        ...


class SequentialExecutor:
    """Runs one unit at a time, in order, in the caller's thread."""

    def run(
        self,
        units: Sequence[Unit],
        execute: Callable[[Unit], Result],
        done: Callable[[Unit, Result], bool],
    ) -> list[Result]:
        """Execute ``units`` in order; stop after the first unit ``done`` refuses."""
        results: list[Result] = []
        for unit in units:
            result = execute(unit)
            results.append(result)
            if not done(unit, result):
                break
        return results


__all__ = ["SequentialExecutor", "TrialExecutor"]
