"""Process scopes: the process groups started on behalf of one caller, killed together.

An interrupt (Ctrl-C, SIGTERM) reaches only the main thread; a :class:`ProcessScope` lets the
caller stop every process group its threads started, and refuse to start more.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import signal
import threading
from collections.abc import Callable
from types import TracebackType
from typing import ParamSpec, TypeVar


def kill_group(pgid: int) -> None:
    """SIGKILL process group ``pgid``; a group that is gone already is not an error."""
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
        self._groups: dict[int, Callable[[], None]] = {}
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
            for stop in self._groups.values():
                stop()

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

    def check(self) -> None:
        """Raise :class:`ExecutionCancelled` when this scope or an enclosing one is cancelled."""
        if any(scope.cancelled for scope in self._chain()):
            raise ExecutionCancelled("cancelled: the run was interrupted")

    def register(self, pgid: int, stop: Callable[[], None] | None = None) -> None:
        """Track process group ``pgid``; a scope cancelled meanwhile stops it at once.

        ``stop`` ends the group (default: SIGKILL to the whole group); it is called with the
        scope's lock held, so it must not block.
        """
        action = stop if stop is not None else functools.partial(kill_group, pgid)
        for scope in self._chain():
            with scope._lock:
                scope._groups[pgid] = action
                if scope._cancelled:
                    action()

    def registered(self, pgid: int) -> bool:
        """Whether ``pgid`` is still tracked (its leader is not reaped yet)."""
        with self._lock:
            return pgid in self._groups

    def unregister(self, pgid: int) -> None:
        """Stop tracking ``pgid`` (before its leader is reaped, so a pid is never reused)."""
        for scope in self._chain():
            with scope._lock:
                scope._groups.pop(pgid, None)


_SCOPE: contextvars.ContextVar[ProcessScope | None] = contextvars.ContextVar(
    "lorelab_process_scope", default=None
)


def current_scope() -> ProcessScope | None:
    """The :class:`ProcessScope` the calling code runs in, if any."""
    return _SCOPE.get()
