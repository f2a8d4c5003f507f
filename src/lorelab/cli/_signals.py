"""How a termination unwinds: SIGTERM raised as a ``KeyboardInterrupt`` so cleanup runs.

Kept free of click, so the hook entry point (``lorelab.cli._entry``) can use it too.
"""

from __future__ import annotations

import signal


class Terminated(KeyboardInterrupt):
    """Raised by the SIGTERM handler so a termination unwinds (and cleans up) like Ctrl-C."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(f"terminated by signal {signal_number}")
        self.signal_number = signal_number


def raise_terminated(signal_number: int, _frame: object) -> None:
    """SIGTERM handler: unwind the stack so ``finally`` blocks kill workers and keep receipts."""
    raise Terminated(signal_number)


def interrupted_exit_code(exc: KeyboardInterrupt) -> tuple[str, int]:
    """The signal's name and the shell's exit code for it (128 + signal number)."""
    number = exc.signal_number if isinstance(exc, Terminated) else signal.SIGINT
    return signal.Signals(number).name, 128 + number
