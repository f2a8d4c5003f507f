"""One subprocess in its own process group, with a deadline, a bounded output tail and no orphans.

The process is watched through a pidfd (where the kernel has one) next to its output pipe, so
its exit is noticed at once without polling. At exit or at the deadline the whole process group
is killed before the leader is reaped, which also removes children a test left running.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, ParamSpec, TypeVar

_CHUNK: Final = 65536
_TAIL_BYTES: Final = 64 * 1024
# After the group is killed, output still buffered in the pipe is drained for at most this
# long; only a process that escaped the group (setsid) can hold the pipe open past it.
_DRAIN_GRACE_S: Final = 2.0
# Without a pidfd the exit is noticed by polling at this interval.
_POLL_S: Final = 0.02


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What one process did: exit status or signal, duration, and the tail of its output."""

    argv: tuple[str, ...]
    exit_code: int | None
    signal: str | None
    timed_out: bool
    duration_ms: int
    output_tail: bytes
    output_sha256: str
    output_bytes: int


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


_P = ParamSpec("_P")
_R = TypeVar("_R")


class ExecutionCancelled(Exception):
    """Raised by :func:`run_process` in a cancelled :class:`ProcessScope`: nothing more runs."""


class ProcessScope:
    """The process groups :func:`run_process` starts on behalf of one caller, killed together.

    An interrupt (Ctrl-C, SIGTERM) reaches only the main thread; processes started by pool
    threads would run on to their timeouts. Inside ``with ProcessScope() as scope:`` (and in
    functions wrapped by ``scope.bind``, for other threads), every process group started is
    registered; leaving the block by an exception kills them all at once, and any later
    :func:`run_process` in the scope raises :class:`ExecutionCancelled` instead of starting.
    Enter the scope *inside* the thread pool's own ``with`` so it cancels before the pool waits.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._cancelled = False
        self._parent = _SCOPE.get()
        self._token: contextvars.Token[ProcessScope | None] | None = None

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Kill every registered process group now and refuse to start any more."""
        with self._lock:
            self._cancelled = True
            for pgid in self._groups:
                _kill_group(pgid)

    def bind(self, function: Callable[_P, _R]) -> Callable[_P, _R]:
        """``function`` made to run inside this scope in whatever thread calls it."""

        @functools.wraps(function)
        def bound(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            token = _SCOPE.set(self)
            try:
                return function(*args, **kwargs)
            finally:
                _SCOPE.reset(token)

        return bound

    def __enter__(self) -> ProcessScope:
        self._token = _SCOPE.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            self.cancel()
        if self._token is not None:
            _SCOPE.reset(self._token)
            self._token = None

    def _chain(self) -> list[ProcessScope]:
        scopes: list[ProcessScope] = []
        scope: ProcessScope | None = self
        while scope is not None:
            scopes.append(scope)
            scope = scope._parent
        return scopes

    def _check(self) -> None:
        if any(scope.cancelled for scope in self._chain()):
            raise ExecutionCancelled("cancelled: the run was interrupted")

    def _register(self, pgid: int) -> None:
        # A scope cancelled between the check and the start kills the new group at once.
        for scope in self._chain():
            with scope._lock:
                scope._groups.add(pgid)
                if scope._cancelled:
                    _kill_group(pgid)

    def _unregister(self, pgid: int) -> None:
        for scope in self._chain():
            with scope._lock:
                scope._groups.discard(pgid)


_SCOPE: contextvars.ContextVar[ProcessScope | None] = contextvars.ContextVar(
    "lorelab_process_scope", default=None
)


def _open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


class _Tail:
    """Keeps the last ``limit`` bytes written to it, and hashes and counts everything."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.digest = hashlib.sha256()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.digest.update(chunk)
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.limit:
            del self.data[: len(self.data) - self.limit]

    def value(self) -> bytes:
        return bytes(self.data[-self.limit :])


def _drain(fd: int, tail: _Tail, grace_s: float) -> None:
    end = time.monotonic() + grace_s
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (remaining := end - time.monotonic()) > 0:
            if not selector.select(remaining):
                return
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return
            tail.add(chunk)


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    tail_bytes: int = _TAIL_BYTES,
) -> ProcessResult:
    """Run ``argv`` in ``cwd`` with ``env``; kill its whole group at exit or at ``timeout_s``.

    Stdin is empty; stdout and stderr share one pipe, of which the last ``tail_bytes`` are kept
    (all of it is hashed and counted). A program that cannot be started raises ``OSError``.
    In a cancelled :class:`ProcessScope` nothing starts (or a killed run's result is not
    returned): :class:`ExecutionCancelled` is raised.
    """
    scope = _SCOPE.get()
    if scope is not None:
        scope._check()
    tail = _Tail(tail_bytes)
    start = time.monotonic()
    deadline = start + timeout_s
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    if scope is not None:
        scope._register(proc.pid)
    out_fd = proc.stdout.fileno()
    pidfd = _open_pidfd(proc.pid)
    timed_out = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(out_fd, selectors.EVENT_READ, "out")
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ, "exit")
            output_open = True
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                wait = remaining if pidfd is not None else min(remaining, _POLL_S)
                events = selector.select(wait)
                exited = False
                for key, _ in events:
                    if key.data == "exit":
                        exited = True
                    elif output_open:
                        chunk = os.read(out_fd, _CHUNK)
                        if chunk:
                            tail.add(chunk)
                        else:
                            output_open = False
                            selector.unregister(out_fd)
                if pidfd is None and proc.poll() is not None:
                    exited = True
                if exited:
                    break
        # The leader is a zombie (or still running at the deadline), so its pid still names
        # the group: killing now cannot reach an unrelated process that reused the pid.
        _kill_group(proc.pid)
        if scope is not None:
            # Before the leader is reaped, so a cancel never signals a reused pid.
            scope._unregister(proc.pid)
        returncode = proc.wait()
        duration_ms = int((time.monotonic() - start) * 1000)
        _drain(out_fd, tail, _DRAIN_GRACE_S)
    finally:
        if pidfd is not None:
            os.close(pidfd)
        if proc.returncode is None:
            _kill_group(proc.pid)
            if scope is not None:
                scope._unregister(proc.pid)
            proc.wait()
        proc.stdout.close()
    if scope is not None:
        # A run killed by a cancel is not a test outcome: never report it as one.
        scope._check()
    if returncode < 0:
        exit_code: int | None = None
        signal_name: str | None = _signal_name(-returncode)
    else:
        exit_code, signal_name = returncode, None
    return ProcessResult(
        argv=tuple(argv),
        exit_code=exit_code,
        signal=signal_name,
        timed_out=timed_out,
        duration_ms=duration_ms,
        output_tail=tail.value(),
        output_sha256=tail.digest.hexdigest(),
        output_bytes=tail.total,
    )
