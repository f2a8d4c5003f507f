"""Keep a short piece of bookkeeping whole across Ctrl-C and SIGTERM.

An interrupt raises wherever the main thread happens to be. Where two writes must happen
together (a run's receipt on disk and its record in the run's list, from which
``aborted.json`` counts what was completed), an interrupt between them would leave a receipt
that the abort record does not count. :func:`interrupts_deferred` holds SIGINT and SIGTERM
for the length of such a block: a signal that arrives meanwhile is remembered and delivered,
to the handler that was in place, as soon as the block ends. The block must be short and
must not wait on anything that only an interrupt would end.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Run the block with SIGINT and SIGTERM held; deliver any that came once it ends.

    Outside the main thread (where handlers cannot be changed) the block runs as it is; a
    signal whose handler was not set from Python is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def remember(number: int, _frame: FrameType | None) -> None:
        arrived.append(number)

    previous = {
        number: handler for number in _HELD if (handler := signal.getsignal(number)) is not None
    }
    for held in previous:
        signal.signal(held, remember)
    try:
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
        for number in dict.fromkeys(arrived):
            signal.raise_signal(number)
