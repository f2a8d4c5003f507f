"""The executor interface and the sequential executor (see the package docstring)."""

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
