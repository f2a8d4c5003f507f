"""The containment launcher: run one program and leave none of its descendants behind.

Run as a script (``python -I -S _reaper.py PROGRAM ARGV0 ARG...``) once per test process, so it
imports as little as it can (no ``typing``, no ``contextlib``). It marks itself a child
subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process its child starts, including one
that double-forks or calls ``setsid`` to leave the process group, is re-parented to it rather
than to init. When the child exits, or when the launcher receives SIGTERM (the supervisor's
"stop now"), it SIGKILLs every descendant it can find, reaps them all, and exits the way the
child did: with its exit status, or killed by the same signal. With ``LORELAB_REAPER_STATUS_FD``
it also writes the child's wait status there (a sandbox around it reports a signal as 128+N).

Where ``prctl`` is unavailable (not Linux), it still runs the child and kills what it can find
below itself; a process that escaped then is re-parented to init and out of reach
(:func:`subreaper_supported` tells the supervisor which case it is in).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
STATUS_FD_ENV = "LORELAB_REAPER_STATUS_FD"
"""Names a descriptor on which the launcher writes the child's wait status, in decimal."""
# Kill rounds before giving up on a process that keeps forking (each round kills all it finds).
_MAX_ROUNDS = 1000


def _prctl() -> ctypes._NamedFuncPointer | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        # The interpreter's own symbols include libc's (find_library would start ldconfig).
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def set_subreaper(on: bool = True) -> bool:
    """Make this process the reaper of its orphaned descendants (``on=False``: no longer);
    False where not possible."""
    prctl = _prctl()
    return prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0


def is_subreaper() -> bool:
    """Whether this process is a child subreaper now."""
    prctl = _prctl()
    if prctl is None:
        return False
    value = ctypes.c_int(0)
    return prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0) == 0 and value.value != 0


def subreaper_supported() -> bool:
    """Whether this kernel has child subreapers (asked without changing this process)."""
    prctl = _prctl()
    if prctl is None:
        return False
    value = ctypes.c_int(0)
    return bool(prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0) == 0)


def process_table() -> dict[int, tuple[int, int]]:
    """Every visible process with its parent and start time (clock ticks), read from /proc."""
    table: dict[int, tuple[int, int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            table[int(name)] = (int(fields[1]), int(fields[19]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def descendants(root: int) -> list[int]:
    """The processes below ``root`` in the process tree, found through /proc."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _started) in process_table().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _wait_one() -> None:
    """Block until one child exits and reap it; return at once without children."""
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        return


def _reap_all() -> None:
    """Reap every exited child without blocking."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill(pid: int) -> None:
    """SIGKILL ``pid``; one that is gone already is not an error."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return


def kill_descendants() -> None:
    """SIGKILL and reap every descendant of this process until none is left."""
    me = os.getpid()
    for _ in range(_MAX_ROUNDS):
        found = descendants(me)
        if not found:
            _reap_all()
            return
        for pid in found:
            _kill(pid)
        _wait_one()
        _reap_all()


def _exit_like(status: int) -> None:
    """Exit as the child did: the same exit code, or killed by the same signal."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    number = -code
    # Mirroring SIGSEGV or SIGABRT must not leave a core file of the launcher.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if number not in (signal.SIGKILL, signal.SIGSTOP):  # they have no handler to reset
        signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
    os.kill(os.getpid(), number)
    os._exit(128 + number)


def _report(fd: int, status: int) -> None:
    """Write the child's wait status to ``fd`` (nobody may be reading: not an error)."""
    try:
        os.write(fd, str(status).encode("ascii"))
        os.close(fd)
    except OSError:
        return


def main(argv: list[str]) -> None:
    """``PROGRAM ARGV0 ARG...``: run PROGRAM with argv ``ARGV0 ARG...``; never returns."""
    if len(argv) < 2:
        sys.stderr.write("lorelab reaper: usage: PROGRAM ARGV0 [ARG...]\n")
        os._exit(127)
    program, child_argv = argv[0], argv[1:]
    status_fd = int(os.environ.pop(STATUS_FD_ENV, "-1"))
    if status_fd >= 0:
        os.set_inheritable(status_fd, False)
    set_subreaper()
    child = 0
    stop = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True
        if child:
            _kill(child)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child = os.posix_spawn(program, child_argv, os.environ, setsigdef=(signal.SIGINT,))
    except OSError as exc:
        sys.stderr.write(f"lorelab reaper: cannot start {program}: {exc.strerror}\n")
        os._exit(127)
    if stop:
        on_term(signal.SIGTERM, None)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(127)
        if pid == child:
            break
    kill_descendants()
    if status_fd >= 0:
        # The child's own wait status: a sandbox around us would report a signal as 128+N.
        _report(status_fd, status)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
