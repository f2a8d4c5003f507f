"""Running the conditions runner's async parts from synchronous code, with interrupts and
lorelab errors raised as themselves rather than wrapped in exception groups."""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from lorelab.errors import LorelabError


def _interrupt(_signal_number: int, _frame: object) -> None:
    raise KeyboardInterrupt


def run_async(function: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run ``function`` in an event loop; an interrupt, a lorelab error or an OS error inside a
    task group is raised as itself, not wrapped in an exception group.

    Ctrl-C raises ``KeyboardInterrupt`` wherever the main thread is (asyncio's own handler
    would only cancel the main task and wait for a blocking host call to end)."""
    handler = None
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        handler = signal.signal(signal.SIGINT, _interrupt)
    try:
        anyio.run(function, *args)
    except BaseExceptionGroup as group:
        leaf = _first_leaf(group)
        if leaf is not None:
            raise leaf from None
        raise
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    leaves: list[BaseException] = []

    def walk(found: BaseExceptionGroup[BaseException]) -> None:
        for exc in found.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                walk(exc)
            else:
                leaves.append(exc)

    walk(group)
    # An interrupt wins over whatever it caused (a broken session, a cancelled call).
    for leaf in leaves:
        if isinstance(leaf, KeyboardInterrupt):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, LorelabError | OSError):
            return leaf
    return None
