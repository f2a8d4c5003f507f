"""Finding processes from outside a sandbox: its PID namespace makes the pids a test reports
from inside meaningless out here, so processes are found by a unique token in /proc."""

from __future__ import annotations

import os
import time


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (every thread's children)."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", encoding="utf-8") as handle:
            found += [int(child) for child in handle.read().split()]
    return found


def gone_soon(pid: int, bound_s: float = 30.0) -> bool:
    """Whether ``pid`` is dead within ``bound_s``. SIGKILL is delivered asynchronously: on a
    loaded machine a process lorelab killed can still be exiting when lorelab itself has
    exited, so "killed" is checked as "dead before a generous bound", never as "dead at once"."""
    deadline = time.monotonic() + bound_s
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def no_listener_soon(port: int, bound_s: float = 30.0) -> bool:
    """Whether no socket listens on TCP ``port`` (IPv4 or IPv6) within ``bound_s``."""
    deadline = time.monotonic() + bound_s
    while True:
        listening = False
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table, encoding="utf-8") as handle:
                for line in handle.read().splitlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        listening = True
        if not listening:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def running_with(token: str) -> list[int]:
    """Host pids of live processes whose command line holds ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if token.encode() in handle.read() and alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found
