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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any, Final

from lorelab.evaluation.executors._interface import Batch, Result, TrialExecutor, Unit, Work

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


@dataclass(kw_only=True)
class _Workers(Batch[Unit, Result]):
    """Worker processes, each running one unit at a time, started as units are handed out."""

    context: SpawnContext
    workers: list[_Worker] = field(default_factory=list)

    def _spawn(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=_serve, args=(theirs, self.work.execute), daemon=True)
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def launch(self, index: int, unit: Unit) -> None:
        worker = next((worker for worker in self.workers if worker.busy is None), None)
        if worker is None:
            worker = self._spawn()
            self.workers.append(worker)
        worker.connection.send((index, unit))
        worker.busy = index

    def ended(self) -> Iterator[tuple[int, Result]]:
        busy = [worker for worker in self.workers if worker.busy is not None]
        ready = wait([w.connection for w in busy] + [w.process.sentinel for w in busy])
        for position, worker in enumerate(self.workers):
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
                result = self._replace(position) if ok is None else value
            elif worker.process.sentinel in ready:
                result = self._replace(position)
            else:
                continue
            self.workers[position].busy = None
            del self.running[index]
            yield index, result

    def _replace(self, position: int) -> Result:
        """The dead worker at ``position`` loses its unit; a fresh process takes its place."""
        dead = self.workers[position]
        index = dead.busy
        assert index is not None
        dead.process.join(STOP_GRACE_S)
        code = dead.process.exitcode
        dead.connection.close()
        reason = f"local worker process {dead.process.pid} died (exit code {code})"
        self.workers[position] = self._spawn()
        return self.lose(index, reason)

    def abort(self) -> None:
        _stop(self.workers, graceful=False)

    def finish(self) -> None:
        _stop(self.workers, graceful=True)


class PoolExecutor(TrialExecutor):
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

    def batch(self, work: Work[Unit, Result]) -> Batch[Unit, Result]:
        """Workers started as units are handed out, ``jobs`` at the most, ended with the run."""
        return _Workers(work=work, capacity=self.jobs, context=self._context)


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
