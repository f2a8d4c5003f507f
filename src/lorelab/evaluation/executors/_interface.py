"""The executor interface and the sequential executor (see the package docstring)."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

Unit = TypeVar("Unit")
Result = TypeVar("Result")

EXECUTOR_FAILURE = "executor-failure"
"""What a unit is recorded as when the process or node running it died."""


@dataclass(frozen=True, slots=True)
class Lost:
    """A unit whose worker process or node died before it reported: it has no result."""

    reason: str


Execute = Callable[[Unit], Result]
"""Runs one unit (in a worker process or node for the concurrent executors)."""
Done = Callable[[Unit, Result], bool]
"""Called in the caller's thread with each result as it ends; False stops the run."""
OnLost = Callable[[Unit, Lost], Result]
"""The caller's record of a unit whose worker died (see :func:`lost_result`)."""


class TrialExecutor(Protocol):
    """Runs units and reports each result as it ends (see the module docstring)."""

    concurrent: bool
    """Whether units may run side by side (time comparisons are then confounded)."""

    def describe(self) -> dict[str, object]:
        """What the receipts say about this executor."""
        ...

    def close(self) -> None:
        """Release what the executor started (a local Ray instance); idempotent."""
        ...

    def run(
        self,
        units: Sequence[Unit],
        execute: Execute[Unit, Result],
        done: Done[Unit, Result],
        lost: OnLost[Unit, Result] | None = None,
    ) -> list[Result]:
        """Execute ``units``; call ``done`` with each result; stop when it returns False."""
        ...


class ExecutorFailure(Exception):
    """A worker died and the caller gave no ``lost`` callback to record it with."""


def lost_result(unit: Unit, reason: str, lost: OnLost[Unit, Result] | None) -> Result:
    """The caller's record of a lost unit; without a callback, :class:`ExecutorFailure`."""
    if lost is None:
        raise ExecutorFailure(f"{EXECUTOR_FAILURE}: {reason}")
    return lost(unit, Lost(reason))


class SequentialExecutor:
    """Runs one unit at a time, in order, in the caller's thread."""

    concurrent = False

    def describe(self) -> dict[str, object]:
        """What the receipts say about this executor."""
        return {"kind": "sequential", "jobs": 1}

    def close(self) -> None:
        """Nothing to release."""

    def run(
        self,
        units: Sequence[Unit],
        execute: Execute[Unit, Result],
        done: Done[Unit, Result],
        lost: OnLost[Unit, Result] | None = None,
    ) -> list[Result]:
        """Execute ``units`` in order; stop after the first unit ``done`` refuses."""
        results: list[Result] = []
        for unit in units:
            result = execute(unit)
            results.append(result)
            if not done(unit, result):
                break
        return results


def worker_location() -> dict[str, object]:
    """Where the calling process runs: host name, process id, and the Ray node id inside a
    Ray worker (Ray is never imported here, only asked when it is loaded already)."""
    where: dict[str, object] = {"node": socket.gethostname(), "pid": os.getpid()}
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        where["rayNodeId"] = ray.get_runtime_context().get_node_id()
    return where
