"""Helpers for tests that start real processes."""

from __future__ import annotations

import time


def gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether ``pid`` is dead (absent or a zombie), waiting at most ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False
