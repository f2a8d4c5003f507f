"""``--executor ray [--ray-address ADDR]``: units as Ray tasks on a Ray cluster.

Ray is imported only here, and only when this executor is asked for (``lorelab[ray]``). Each
unit is one Ray task with ``max_retries=0``: Ray never re-runs it, so a task whose worker
process or node died is reported through ``lost`` with Ray's own reason (executor-failure),
never retried. At most as many units are in flight as the cluster has CPUs (or ``jobs``), so
after ``done`` refuses no new unit starts. Results come back to the calling process, which
writes every receipt. Without ``--ray-address`` a local Ray instance is started for the run
and shut down after it; with it, the existing cluster is joined and left running.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Final

from lorelab.errors import PreflightError, UsageError
from lorelab.evaluation.executors._interface import Batch, Result, TrialExecutor, Unit, Work

INSTALL_HINT: Final = "pip install 'lorelab[ray]'"
CANCEL_GRACE_S: Final = 10.0
# Ray's errors that mean the process or node running a task is gone (the task itself did not
# fail): the unit is lost, not failed.
_LOST_ERRORS: Final = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "ObjectLostError",
    "OwnerDiedError",
    "OutOfMemoryError",
    "TaskUnschedulableError",
    "ActorDiedError",
)


def import_ray() -> Any:
    """The ``ray`` module; a missing Ray is a usage error naming the extra to install."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise UsageError(f"--executor ray: Ray is not installed ({INSTALL_HINT})") from None


@contextlib.contextmanager
def _raised_by_signals() -> Iterator[list[BaseException]]:
    """Remember what the SIGTERM and SIGINT handlers raise while Ray waits."""
    raised: list[BaseException] = []
    if threading.current_thread() is not threading.main_thread():
        yield raised
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def remember(signum: int, frame: FrameType | None) -> None:
        handler = previous[signal.Signals(signum)]
        try:
            if callable(handler):
                handler(signum, frame)
            elif signum == signal.SIGINT:
                raise KeyboardInterrupt
        except BaseException as exc:
            raised.append(exc)
            raise

    for sig, handler in previous.items():
        if callable(handler):
            signal.signal(sig, remember)
    try:
        yield raised
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)


class RayExecutor(TrialExecutor):
    """Runs units as Ray tasks, one CPU each, on a local or remote Ray cluster."""

    concurrent = True

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        self.ray = import_ray()
        self.address = address
        self._owns = False
        if not self.ray.is_initialized():
            # Ray's core worker installs its own SIGTERM/SIGINT handlers (it aborts the
            # process); lorelab's own go back, so a stopped run unwinds and leaves receipts.
            handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
            try:
                self.ray.init(
                    address=address,
                    num_cpus=jobs if address is None else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = address or "a local Ray instance"
                raise PreflightError(f"--executor ray: cannot reach {where}: {exc}") from None
            finally:
                if threading.current_thread() is threading.main_thread():
                    for sig, handler in handlers.items():
                        if handler is not None:
                            signal.signal(sig, handler)
            self._owns = address is None
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        self.slots = max(1, min(cpus, jobs) if jobs else cpus)

    def describe(self) -> dict[str, object]:
        """What the receipts say about this executor."""
        nodes = [node["NodeManagerAddress"] for node in self.ray.nodes() if node.get("Alive")]
        return {
            "kind": "ray",
            "jobs": self.slots,
            "address": self.address,
            "nodes": sorted(nodes),
            "rayVersion": self.ray.__version__,
        }

    def close(self) -> None:
        """Stop the local Ray instance this executor started (a joined cluster stays)."""
        if self.ray.is_initialized():
            with contextlib.redirect_stdout(sys.stderr):
                self.ray.shutdown()
            self._owns = False

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Ray prints what its nodes report (a worker that died, ...) from a background thread
        on stdout; stdout belongs to the command's own output (--json), so it goes to stderr.
        An interrupt is raised as what the signal handler raised."""
        with contextlib.redirect_stdout(sys.stderr), _raised_by_signals() as raised:
            try:
                yield
            except KeyboardInterrupt:
                # Ray's waits turn whatever a signal handler raised into a bare
                # KeyboardInterrupt; the handler's own exception (SIGTERM's) is the one.
                if raised:
                    raise raised[-1] from None
                raise

    def batch(self, work: Work[Unit, Result]) -> Batch[Unit, Result]:
        """Ray tasks, as many in flight as the executor has slots."""
        remote = self.ray.remote(num_cpus=1, max_retries=0, retry_exceptions=False)(work.execute)
        return _Tasks(work=work, capacity=self.slots, ray=self.ray, remote=remote)


@dataclass(kw_only=True)
class _Tasks(Batch[Unit, Result]):
    """Units in flight as Ray tasks (``remote``: the unit's function as a Ray task)."""

    ray: Any
    remote: Any
    pending: dict[Any, int] = field(default_factory=dict)

    def launch(self, index: int, unit: Unit) -> None:
        self.pending[self.remote.remote(unit)] = index

    def ended(self) -> Iterator[tuple[int, Result]]:
        ready, _ = self.ray.wait(list(self.pending), num_returns=1)
        index = self.pending.pop(ready[0])
        result = self._result(ready[0], index)
        del self.running[index]
        yield index, result

    def _result(self, ref: Any, index: int) -> Result:
        errors = self.ray.exceptions
        try:
            value: Result = self.ray.get(ref)
        except errors.RayTaskError as exc:
            # The unit's own exception, raised as itself.
            raise (exc.cause if exc.cause is not None else exc) from None
        except errors.RayError as exc:
            if type(exc).__name__ not in _LOST_ERRORS and not isinstance(
                exc, errors.TaskCancelledError
            ):
                raise
            reason = " ".join(str(exc).split())[:600]
            return self.lose(index, f"ray: {type(exc).__name__}: {reason}")
        return value

    def abort(self) -> None:
        """Stop running tasks: first as an interrupt (their processes' groups are killed on
        the way out), then by force for what has not ended within the grace."""
        refs = list(self.pending)
        for ref in refs:
            self.ray.cancel(ref, force=False)
        if refs:
            _, still = self.ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S)
            for ref in still:
                self.ray.cancel(ref, force=True)
