"""``--jobs N``: a pool of N local worker processes, each running one unit at a time.

Each worker is a fresh Python process (``spawn``), started once and reused; the function that
executes a unit must be importable at module level (it is pickled by reference). A worker that
dies while it runs a unit (killed, out of memory, a crash of the interpreter) loses that unit
only: it is reported through ``lost`` with the exit code, never retried, and a fresh process
takes the worker's place for the units still to come. On an interrupt or any error the
coordinator sends SIGTERM to the workers, which unwinds them like Ctrl-C (their host and
verify processes are killed with their groups), then kills what is left.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Final, Generic

from lorelab.evaluation.executors._interface import (
    Done,
    Execute,
    OnLost,
    Result,
    Unit,
    lost_result,
)

STOP_GRACE_S: Final = 10.0


def _terminated(_signal_number: int, _frame: object) -> None:
    raise KeyboardInterrupt("terminated")


def _serve(connection: Connection, execute: Callable[[Any], Any]) -> None:
    """A worker process: run each unit it is sent, send back its result or its exception."""
    signal.signal(signal.SIGTERM, _terminated)
    while True:
        try:
            message = connection.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if message is None:
            return
        index, unit = message
        try:
            connection.send((index, True, execute(unit)))
        except BaseException as exc:  # every failure goes back to the caller
            try:
                connection.send((index, False, exc))
            except Exception:  # an exception that cannot be pickled
                connection.send((index, False, RuntimeError(f"{type(exc).__name__}: {exc}")))
            if isinstance(exc, KeyboardInterrupt):
                return


@dataclass(slots=True)
class _Worker:
    process: BaseProcess
    connection: Connection
    busy: int | None = None


@dataclass(slots=True)
class _State(Generic[Unit, Result]):
    units: Sequence[Unit]
    results: dict[int, Result] = field(default_factory=dict)
    next_index: int = 0
    stopped: bool = False


class PoolExecutor:
    """Runs up to ``jobs`` units side by side in local worker processes."""

    concurrent = True

    def __init__(self, jobs: int) -> None:
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.jobs = jobs
        self._context = multiprocessing.get_context("spawn")

    def describe(self) -> dict[str, object]:
        """What the receipts say about this executor."""
        return {"kind": "local-pool", "jobs": self.jobs}

    def close(self) -> None:
        """Nothing to release: the workers of a run end with it."""

    def _start(self, execute: Execute[Unit, Result]) -> _Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(theirs, execute), daemon=True)
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def run(
        self,
        units: Sequence[Unit],
        execute: Execute[Unit, Result],
        done: Done[Unit, Result],
        lost: OnLost[Unit, Result] | None = None,
    ) -> list[Result]:
        """Execute ``units``, ``jobs`` at a time; report each as it ends (see the package)."""
        state: _State[Unit, Result] = _State(units)
        workers = [self._start(execute) for _ in range(min(self.jobs, len(units)))]
        try:
            while True:
                self._hand_out(workers, state)
                if all(worker.busy is None for worker in workers):
                    break
                self._collect(workers, state, execute, done, lost)
        except BaseException:
            _stop(workers, graceful=False)
            raise
        _stop(workers, graceful=True)
        return [state.results[index] for index in sorted(state.results)]

    def _hand_out(self, workers: list[_Worker], state: _State[Unit, Result]) -> None:
        for worker in workers:
            if state.stopped or state.next_index >= len(state.units):
                return
            if worker.busy is None:
                worker.connection.send((state.next_index, state.units[state.next_index]))
                worker.busy = state.next_index
                state.next_index += 1

    def _collect(
        self,
        workers: list[_Worker],
        state: _State[Unit, Result],
        execute: Execute[Unit, Result],
        done: Done[Unit, Result],
        lost: OnLost[Unit, Result] | None,
    ) -> None:
        busy = [worker for worker in workers if worker.busy is not None]
        ready = wait([w.connection for w in busy] + [w.process.sentinel for w in busy])
        for position, worker in enumerate(workers):
            index = worker.busy
            if index is None:
                continue
            result: Result
            if worker.connection in ready and worker.connection.poll():
                try:
                    _, ok, value = worker.connection.recv()
                except EOFError:
                    _, ok, value = index, None, None
                if ok is False:
                    raise value
                if ok is None:
                    result = self._replace(workers, position, execute, state, lost)
                else:
                    result = value
            elif worker.process.sentinel in ready:
                result = self._replace(workers, position, execute, state, lost)
            else:
                continue
            workers[position].busy = None
            state.results[index] = result
            if not done(state.units[index], result):
                state.stopped = True

    def _replace(
        self,
        workers: list[_Worker],
        position: int,
        execute: Execute[Unit, Result],
        state: _State[Unit, Result],
        lost: OnLost[Unit, Result] | None,
    ) -> Result:
        """The dead worker at ``position`` loses its unit; a fresh process takes its place."""
        dead = workers[position]
        index = dead.busy
        assert index is not None
        dead.process.join(STOP_GRACE_S)
        code = dead.process.exitcode
        dead.connection.close()
        reason = f"local worker process {dead.process.pid} died (exit code {code})"
        workers[position] = self._start(execute)
        return lost_result(state.units[index], reason, lost)


def _stop(workers: list[_Worker], *, graceful: bool) -> None:
    """End the workers: ask them to exit, or SIGTERM them; kill whatever outlives the grace."""
    for worker in workers:
        try:
            if graceful:
                worker.connection.send(None)
            elif worker.process.is_alive():
                worker.process.terminate()
        except OSError:
            pass
    for worker in workers:
        worker.process.join(STOP_GRACE_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(STOP_GRACE_S)
        worker.connection.close()
