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
  calls of one unit), so latency is not confounded within a unit;
- after ``done`` returns ``False`` no new unit starts; units already running finish and are
  reported before ``run`` returns;
- an exception from ``execute`` or ``done`` (an interrupt included) propagates unchanged
  once running units are stopped;
- a unit whose worker process or node died has no result: it is handed to ``lost`` with the
  reason (the caller records it as ``executor-failure``); without ``lost`` the run stops with
  :class:`ExecutorFailure`.

Three executors: :class:`SequentialExecutor` (one unit at a time in the caller's thread),
:class:`PoolExecutor` (``--jobs N``: N local worker processes) and
:class:`~lorelab.evaluation.executors._ray.RayExecutor` (``--executor ray``: Ray tasks, Ray
imported only then, from the optional extra ``lorelab[ray]``). Concurrent executors pickle
``execute`` and the units: ``execute`` must be a module-level function. All three hand out units
through one loop, :meth:`TrialExecutor.run`; each supplies only a ``Batch``: how a unit starts,
how its end is awaited, how the units still running are stopped.
"""

from typing import Final as _Final

from lorelab.errors import UsageError as _UsageError
from lorelab.evaluation.executors._interface import (
    EXECUTOR_FAILURE,
    ExecutorFailure,
    Lost,
    SequentialExecutor,
    TrialExecutor,
    worker_location,
)
from lorelab.evaluation.executors._pool import PoolExecutor

EXECUTORS: _Final = ("local", "ray")

__all__ = [
    "EXECUTORS",
    "EXECUTOR_FAILURE",
    "ExecutorFailure",
    "Lost",
    "PoolExecutor",
    "SequentialExecutor",
    "TrialExecutor",
    "make_executor",
    "worker_location",
]


def make_executor(
    jobs: int = 1, executor: str = "local", ray_address: str | None = None
) -> TrialExecutor:
    """The executor ``--jobs``/``--executor``/``--ray-address`` ask for (checked here)."""
    if executor not in EXECUTORS:
        raise _UsageError(f"--executor {executor}: expected one of {', '.join(EXECUTORS)}")
    if jobs < 1:
        raise _UsageError(f"--jobs {jobs}: must be at least 1")
    if executor == "ray":
        from lorelab.evaluation.executors._ray import RayExecutor

        return RayExecutor(ray_address, jobs if jobs > 1 else None)
    if ray_address is not None:
        raise _UsageError("--ray-address needs --executor ray")
    return PoolExecutor(jobs) if jobs > 1 else SequentialExecutor()
