"""The orphans of a killed containment launcher: adopted by this process, then killed.

The launcher (:mod:`lorelab.io._reaper`) is the subreaper of a test run, but a test can SIGKILL
it: a ``setsid`` daemon the test started would then be re-parented to init and outlive the
run. While a test run is under way this process is a child subreaper too, so those orphans come
here instead; when a launcher ends without reporting its child's status (it was killed), every
process re-parented here since that launcher started is killed with all its descendants and
reaped.

An orphan is told from this process's own children by three marks: its parent is this process,
it started after the launcher did, and no supervisor here started it. A child that other code in
this process started after the launcher, without the supervisor, would be mistaken for one: the
runners, the evaluations and the CLI start none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Collection, Iterator
from typing import Final

from lorelab.io import _reaper

# Kill rounds: each kills every orphan found, whose own children are then re-parented here.
_MAX_ROUNDS: Final = 100
# How long a killed orphan may take to become reapable before it is left as a zombie.
_REAP_S: Final = 5.0

_lock = threading.Lock()
_active = 0
_we_set_it = False


@contextlib.contextmanager
def adopting_orphans() -> Iterator[None]:
    """Be a child subreaper while any test run in this process is under way."""
    global _active, _we_set_it
    with _lock:
        if _active == 0 and not _reaper.is_subreaper():
            _we_set_it = _reaper.set_subreaper()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _we_set_it:
                _reaper.set_subreaper(False)
                _we_set_it = False


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _below(table: dict[int, tuple[int, int]], roots: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    stack = list(roots)
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _reap(pids: list[int]) -> None:
    deadline = time.monotonic() + _REAP_S
    pending = set(pids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                pending.discard(pid)
        if pending:
            time.sleep(0.01)


def kill_orphans(since_ticks: int, keep: Collection[int]) -> int:
    """Kill and reap every process re-parented here that started at or after ``since_ticks``
    and is not in ``keep`` (children the supervisor started), with its descendants; return how
    many orphans there were."""
    me = os.getpid()
    count = 0
    previous: list[int] = []
    for _ in range(_MAX_ROUNDS):
        table = _reaper.process_table()
        orphans = [
            pid
            for pid, (parent, started) in table.items()
            if parent == me and started >= since_ticks and pid not in keep
        ]
        if not orphans or orphans == previous:
            break  # none left, or only ones that cannot be reaped yet (kept as zombies)
        count += len(set(orphans) - set(previous))
        previous = orphans
        for pid in _below(table, orphans):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap(orphans)
    return count
