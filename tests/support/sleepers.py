"""Helpers for tests that start real processes."""

from __future__ import annotations

import contextlib
import os
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


DETACHED_SLEEPERS = """\
import os, subprocess, sys, time
pid_file, token = sys.argv[1], sys.argv[2]
sleeper = [sys.executable, "-c", "import time; time.sleep(300)", token]
# A child in its own session: outside the run's process group.
child = subprocess.Popen(sleeper, start_new_session=True)
# A daemon: double fork and setsid, so its parent is gone before the run ends.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, sleeper)
    os._exit(0)
os.wait()
with open(pid_file, "w") as handle:
    handle.write(str(child.pid))
if len(sys.argv) > 3:
    while True:
        time.sleep(0.05)
"""
"""Leaves two sleepers outside its process group: ``PID_FILE TOKEN [hang]``; each sleeper has
TOKEN in its argv, so it can be found from outside a PID namespace too."""


def processes_with(token: str) -> list[int]:
    """Live (not zombie) processes whose argv holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            with open(f"/proc/{name}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in argv and state not in ("Z", "X"):
            found.append(int(name))
    return found


def sleepers_gone(token: str, within_s: float = 10.0) -> bool:
    """Whether every sleeper marked with ``token`` is dead, waiting at most ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not processes_with(token):
            return True
        time.sleep(0.05)
    return False


def kill_sleepers(token: str) -> None:
    """Clean up after a failed test: kill whatever sleepers survived."""
    for pid in processes_with(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


KILLS_ITS_LAUNCHER = (
    DETACHED_SLEEPERS.replace("if len(sys.argv) > 3:", "if False:")
    + """\
import signal
# The launcher is this program's parent: kill it, as a hostile test would, then linger.
os.kill(os.getppid(), signal.SIGKILL)
time.sleep(2)
"""
)
"""Like DETACHED_SLEEPERS (``PID_FILE TOKEN``), then SIGKILLs its own parent, the containment
launcher, so the sleepers' nearest subreaper is gone."""
