"""The executor interface and the sequential executor (see the package docstring)."""

from __future__ import annotations

import os
import socket
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Generic, TypeVar

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


@dataclass(frozen=True, slots=True)
class Work(Generic[Unit, Result]):
    """What one run asks of its executor: execute each unit; record a lost one (optional)."""

    execute: Execute[Unit, Result]
    lost: OnLost[Unit, Result] | None


@dataclass(kw_only=True)
class Batch(ABC, Generic[Unit, Result]):
    """The units one run of an executor has in flight, and how they end."""

    work: Work[Unit, Result]
    capacity: int
    """How many units may run at once."""
    running: dict[int, Unit] = field(default_factory=dict)
    """The units started and not ended yet, by their index in the run."""

    def free(self) -> bool:
        """Whether one more unit may start now."""
        return len(self.running) < self.capacity

    def start(self, index: int, unit: Unit) -> None:
        """Start ``unit``, the ``index``-th of the run."""
        self.running[index] = unit
        self.launch(index, unit)

    @abstractmethod
    def launch(self, index: int, unit: Unit) -> None:
        """Set ``unit`` going (where and how is the executor's)."""

    @abstractmethod
    def ended(self) -> Iterator[tuple[int, Result]]:
        """Wait until at least one running unit ends; yield each that has, with its index,
        taking it out of :attr:`running`."""

    def lose(self, index: int, reason: str) -> Result:
        """The caller's record of the running unit ``index``, whose worker died."""
        return lost_result(self.running[index], reason, self.work.lost)

    def abort(self) -> None:
        """Stop every running unit at once (an error or an interrupt ends the run)."""

    def finish(self) -> None:
        """Release what the run used once every unit it started has ended."""


class ExecutorFailure(Exception):
    """A worker died and the caller gave no ``lost`` callback to record it with."""


def lost_result(unit: Unit, reason: str, lost: OnLost[Unit, Result] | None) -> Result:
    """The caller's record of a lost unit; without a callback, :class:`ExecutorFailure`."""
    if lost is None:
        raise ExecutorFailure(f"{EXECUTOR_FAILURE}: {reason}")
    return lost(unit, Lost(reason))


class TrialExecutor(ABC):
    """Runs units and reports each result as it ends (see the module docstring).

    Every executor hands out units through the same loop (:meth:`run`); it supplies only the
    :class:`Batch` that starts them and reports them as they end.
    """

    concurrent: bool
    """Whether units may run side by side (time comparisons are then confounded)."""

    @abstractmethod
    def describe(self) -> dict[str, object]:
        """What the receipts say about this executor."""

    @abstractmethod
    def close(self) -> None:
        """Release what the executor started (a local Ray instance); idempotent."""

    @abstractmethod
    def batch(self, work: Work[Unit, Result]) -> Batch[Unit, Result]:
        """A fresh batch for one run of ``work``."""

    def running(self) -> AbstractContextManager[object]:
        """What surrounds a whole run (Ray: its output and signal handling)."""
        return nullcontext()

    def run(
        self,
        units: Sequence[Unit],
        execute: Execute[Unit, Result],
        done: Done[Unit, Result],
        lost: OnLost[Unit, Result] | None = None,
    ) -> list[Result]:
        """Execute ``units``; call ``done`` with each result as it ends; after ``done`` returns
        False no unit starts. The results of the units that ran, in run order."""
        results: dict[int, Result] = {}
        with self.running():
            batch = self.batch(Work(execute, lost))
            next_index, stopped = 0, False
            try:
                while True:
                    while not stopped and next_index < len(units) and batch.free():
                        batch.start(next_index, units[next_index])
                        next_index += 1
                    if not batch.running:
                        break
                    for index, result in batch.ended():
                        results[index] = result
                        if not done(units[index], result):
                            stopped = True
            except BaseException:
                batch.abort()
                raise
            batch.finish()
        return [results[index] for index in sorted(results)]


@dataclass(kw_only=True)
class _InThread(Batch[Unit, Result]):
    """One unit at a time, executed in the caller's thread when its end is awaited."""

    def launch(self, index: int, unit: Unit) -> None:
        """Nothing runs before the caller waits for it."""

    def ended(self) -> Iterator[tuple[int, Result]]:
        index, unit = self.running.popitem()
        yield index, self.work.execute(unit)


class SequentialExecutor(TrialExecutor):
    """Runs one unit at a time, in order, in the caller's thread."""

    concurrent = False

    def describe(self) -> dict[str, object]:
        """What the receipts say about this executor."""
        return {"kind": "sequential", "jobs": 1}

    def close(self) -> None:
        """Nothing to release."""

    def batch(self, work: Work[Unit, Result]) -> Batch[Unit, Result]:
        """Units run one by one; none can be lost (a unit's error is the caller's)."""
        return _InThread(work=work, capacity=1)


def worker_location() -> dict[str, object]:
    """Where the calling process runs: host name, process id, and the Ray node id inside a
    Ray worker (Ray is never imported here, only asked when it is loaded already)."""
    where: dict[str, object] = {"node": socket.gethostname(), "pid": os.getpid()}
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        where["rayNodeId"] = ray.get_runtime_context().get_node_id()
    return where
