"""Module-level unit functions for the concurrent executors (they pickle ``execute`` by name)."""

import os
import signal
import threading
import time
from pathlib import Path


def times_ten(unit: int) -> int:
    return unit * 10


def where(unit: int) -> tuple[int, int]:
    """The unit and the process that ran it, after a short wait so units overlap."""
    time.sleep(0.3)
    return unit, os.getpid()


def die_on_three(unit: int) -> int:
    """Kill this worker process (SIGKILL, no cleanup) on unit 3."""
    if unit == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return unit


def fail_on_two(unit: int) -> int:
    if unit == 2:
        raise ValueError("unit 2 is bad")
    return unit


def mark_started(unit: tuple[str, int]) -> int:
    """Write a marker file named after the unit, so the test sees which units started."""
    directory, number = unit
    Path(directory, str(number)).write_text("started")
    return number


def thread_name(_unit: int) -> str:
    return threading.current_thread().name
