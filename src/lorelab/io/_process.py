"""The one process supervisor: a child in its own process group, bounded output, a deadline.

One thread multiplexes stdin, the output pipes and (on Linux) a pidfd, so a child that floods
its output or never reads stdin cannot block the call, and its exit is noticed at once. At the
deadline, and once the child has exited, its whole process group is killed before the leader is
reaped (so the group id cannot have been reused), which also removes children it left running.
An interrupt (Ctrl-C, SIGTERM, a bug) kills the group before it propagates.

Two ways in: :func:`run_process` for test runs and verify commands (stdout and stderr in one
pipe, tail kept, everything hashed; registered with the caller's :class:`ProcessScope`), and
:func:`run_bounded` for worker calls (stdin written, stdout kept up to a bound whose overflow
kills the child, a stderr tail; a spawn failure is a result, not an exception).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lorelab.io._adopt import adopting_orphans, kill_orphans, start_ticks
from lorelab.io._pipes import Head, StdinFeed, Tail, drain
from lorelab.io._reaper import STATUS_FD_ENV
from lorelab.io._sandbox import SandboxKind, contained_argv, resolve_program
from lorelab.io._scope import ProcessScope, current_scope, kill_group

RUN_TAIL_BYTES: Final = 64 * 1024
"""How much of a test run's output :func:`run_process` keeps by default."""
DEFAULT_STDERR_TAIL: Final = 8 * 1024
"""How much of a worker's stderr :func:`run_bounded` keeps by default."""
# After a test run's group is killed, output still buffered in the pipe is drained for at most
# this long; only a process that escaped the group (setsid) can hold the pipe open past it.
_RUN_DRAIN_GRACE_S: Final = 2.0
# Without a pidfd the exit is noticed by polling at this interval.
_POLL_S: Final = 0.02
# How long a killed child may take to be reaped before it is reported without a status.
_REAP_S: Final = 10.0
# How long the containment launcher gets to kill what it started before its group is killed.
_STOP_GRACE_S: Final = 5.0

# Every child a supervisor here started and has not reaped yet, across threads: never mistaken
# for the orphan of a killed launcher (lorelab.io._adopt).
_live_lock = threading.Lock()
_live: set[int] = set()


def _live_children() -> set[int]:
    with _live_lock:
        return set(_live)


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What one child process did.

    ``stdout`` is the child's standard output when it was captured on its own (a worker call);
    ``output_tail`` is the tail of the other stream (stderr for a worker call, stdout and
    stderr together for a test run), of which ``output_bytes`` were read and hashed.
    """

    argv: tuple[str, ...]
    spawned: bool
    spawn_error: str | None
    returncode: int | None
    timed_out: bool
    duration_ms: int
    stdout: bytes
    stdout_overflow: bool
    output_tail: bytes
    output_sha256: str
    output_bytes: int
    sandbox: SandboxKind | None = None
    """The confinement a test run had (``"none"``, ``"partial"``, ``"bubblewrap"``); ``None``
    for a worker call, which runs uncontained."""

    @property
    def exit_code(self) -> int | None:
        """The exit status when the child exited normally; ``None`` when a signal ended it."""
        if self.returncode is None or self.returncode < 0:
            return None
        return self.returncode

    @property
    def signal_number(self) -> int | None:
        """The signal that ended the child, if one did."""
        if self.returncode is None or self.returncode >= 0:
            return None
        return -self.returncode

    @property
    def signal(self) -> str | None:
        """The name of the signal that ended the child (``"SIGKILL"``), if one did."""
        number = self.signal_number
        if number is None:
            return None
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"


def _open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


@dataclass(frozen=True, slots=True)
class _Options:
    timeout_s: float
    input_bytes: bytes | None
    max_stdout: int | None  # None: stderr joins stdout in the tail
    tail_bytes: int
    new_session: bool
    drain_grace_s: float
    scope: ProcessScope | None
    # Started through the containment launcher, which kills every descendant when asked to stop
    # with SIGTERM; without a PID namespace around it, a SIGKILL would leave escaped ones behind.
    launcher: bool = False
    pid_namespace: bool = False
    status_fd: int | None = None


class _Child:
    """One started child and the sinks of its pipes."""

    def __init__(
        self, proc: subprocess.Popen[bytes], options: _Options, status_read: int | None = None
    ) -> None:
        assert proc.stdout is not None
        self.proc = proc
        self.options = options
        self.tail = Tail(options.tail_bytes)
        self.head = Head(options.max_stdout) if options.max_stdout is not None else None
        self.stdin = StdinFeed(options.input_bytes or b"")
        self.pidfd = _open_pidfd(proc.pid)
        self.out_fd = proc.stdout.fileno()
        self.err_fd = proc.stderr.fileno() if proc.stderr is not None else None
        self.open_pipes = {fd for fd in (self.out_fd, self.err_fd) if fd is not None}
        self.status_read = status_read
        self.started = start_ticks(proc.pid) if options.launcher else None
        self.timed_out = False
        self.reaped = False
        with _live_lock:
            _live.add(proc.pid)

    @property
    def overflow(self) -> bool:
        return self.head is not None and self.head.overflow

    def kill(self) -> None:
        """SIGKILL the child's process group (or only the child when it shares ours).

        A containment launcher is first asked to stop (SIGTERM), so it kills what left the
        group too; the group is killed once it has exited or after a grace period.
        """
        if self.options.launcher and not self.options.pid_namespace and self._alive():
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            self._await_exit(_STOP_GRACE_S)
        if self.options.new_session:
            kill_group(self.proc.pid)
        else:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    def stop_from_scope(self) -> None:
        """A scope's cancel: ask the launcher to stop, SIGKILL the group if it has not."""
        if not (self.options.launcher and not self.options.pid_namespace):
            kill_group(self.proc.pid)
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        scope = self.options.scope
        pgid = self.proc.pid

        def later() -> None:
            # Only while registered is the leader unreaped, so the group id is still its own.
            if scope is not None and scope.registered(pgid):
                kill_group(pgid)

        timer = threading.Timer(_STOP_GRACE_S, later)
        timer.daemon = True
        timer.start()

    def _alive(self) -> bool:
        return self.proc.returncode is None and not self._exited()

    def _exited(self) -> bool:
        """Whether the child has exited (it stays unreaped, so its pid keeps naming it)."""
        if self.pidfd is None:
            return False
        with selectors.DefaultSelector() as selector:
            selector.register(self.pidfd, selectors.EVENT_READ)
            return bool(selector.select(0))

    def _await_exit(self, grace_s: float) -> None:
        if self.pidfd is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace_s)
            return
        with selectors.DefaultSelector() as selector:
            selector.register(self.pidfd, selectors.EVENT_READ)
            selector.select(grace_s)

    def watch(self, deadline: float) -> None:
        """Feed stdin and read the pipes until the child exits, overflows or the deadline."""
        with selectors.DefaultSelector() as selector:
            for fd in self.open_pipes:
                os.set_blocking(fd, False)
                selector.register(fd, selectors.EVENT_READ)
            stdin = self.proc.stdin
            if stdin is not None:
                if self.stdin.pending:
                    os.set_blocking(stdin.fileno(), False)
                    selector.register(stdin.fileno(), selectors.EVENT_WRITE)
                else:
                    stdin.close()
            if self.pidfd is not None:
                selector.register(self.pidfd, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.timed_out = True
                    return
                wait = remaining if self.pidfd is not None else min(remaining, _POLL_S)
                exited = False
                for key, _ in selector.select(wait):
                    fd = int(key.fd)
                    if fd == self.pidfd:
                        exited = True
                    elif fd in self.open_pipes:
                        if not self._sink(fd).read(fd):
                            selector.unregister(fd)
                            self.open_pipes.discard(fd)
                    elif not self.stdin.write(fd):
                        selector.unregister(fd)
                        assert stdin is not None
                        with contextlib.suppress(OSError):
                            stdin.close()
                if self.pidfd is None and self.proc.poll() is not None:
                    exited = True
                if exited or self.overflow:
                    return

    def _sink(self, fd: int) -> Tail | Head:
        if fd == self.out_fd and self.head is not None:
            return self.head
        return self.tail

    def finish(self) -> int | None:
        """Kill what is left, reap the child, drain the pipes; return the child's status."""
        if self.options.new_session or self.overflow or self.timed_out:
            # The leader is a zombie (or still running), so its pid still names the group.
            self.kill()
        if self.options.scope is not None:
            self.options.scope.unregister(self.proc.pid)
        try:
            returncode: int | None = self.proc.wait(timeout=_REAP_S)
        except subprocess.TimeoutExpired:
            returncode = None
        self._reaped()
        reported = None
        if returncode is not None and self.status_read is not None:
            reported = _launcher_status(self.status_read)
        if reported is not None:
            returncode = reported
        else:
            self.kill_orphans()
        for fd in sorted(self.open_pipes):
            if not (fd == self.out_fd and self.overflow):
                drain(fd, self._sink(fd), self.options.drain_grace_s)
        return returncode

    def _reaped(self) -> None:
        self.reaped = True
        with _live_lock:
            _live.discard(self.proc.pid)

    def kill_orphans(self) -> None:
        """A launcher that reported nothing was killed: its orphans were re-parented here."""
        if self.started is not None:
            kill_orphans(self.started, _live_children())

    def close(self) -> None:
        """Release the pipes and pidfd; on an interrupt, kill and reap the child first."""
        if not self.reaped:
            self.kill()
            if self.options.scope is not None:
                self.options.scope.unregister(self.proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=_REAP_S)
            self._reaped()
            self.kill_orphans()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self.pidfd is not None:
            os.close(self.pidfd)


def _launcher_status(fd: int) -> int | None:
    """The child's own status as the launcher reported it (a sandbox reports 128+N for a
    signal); ``None`` when the launcher reported nothing (it was killed)."""
    os.set_blocking(fd, False)
    try:
        text = os.read(fd, 64)
    except (BlockingIOError, OSError):
        return None
    try:
        return os.waitstatus_to_exitcode(int(text.decode("ascii")))
    except ValueError:
        return None


class _SpawnError(Exception):
    """The child could not be started (kept apart from OSErrors raised while watching it)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _supervise(
    argv: Sequence[str],
    *,
    launch_argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    executable: str | None,
    options: _Options,
    sandbox: SandboxKind | None = None,
    status_read: int | None = None,
) -> ProcessResult:
    """Start ``launch_argv`` and watch it to the end (``argv`` is what the caller asked to run);
    a child that cannot start raises _SpawnError."""
    start = time.monotonic()
    try:
        proc = _spawn(launch_argv, cwd=cwd, env=env, executable=executable, options=options)
    finally:
        if options.status_fd is not None:
            # Only the launcher writes the status; our copy would keep the pipe open.
            os.close(options.status_fd)
    child = _Child(proc, options, status_read)
    if options.scope is not None:
        options.scope.register(proc.pid, child.stop_from_scope)
    try:
        child.watch(start + options.timeout_s)
        returncode = child.finish()
        duration_ms = int((time.monotonic() - start) * 1000)
    finally:
        child.close()
    return ProcessResult(
        argv=tuple(argv),
        spawned=True,
        spawn_error=None,
        returncode=returncode,
        timed_out=child.timed_out,
        duration_ms=duration_ms,
        stdout=bytes(child.head.data) if child.head is not None else b"",
        stdout_overflow=child.overflow,
        output_tail=child.tail.value(),
        output_sha256=child.tail.digest.hexdigest(),
        output_bytes=child.tail.total,
        sandbox=sandbox,
    )


def _spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    executable: str | None,
    options: _Options,
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            list(argv),
            executable=executable,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if options.input_bytes is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if options.max_stdout is not None else subprocess.STDOUT,
            start_new_session=options.new_session,
            close_fds=True,
            pass_fds=() if options.status_fd is None else (options.status_fd,),
        )
    except OSError as exc:
        raise _SpawnError(exc) from exc


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    tail_bytes: int = RUN_TAIL_BYTES,
    sandbox: bool = False,
    writable: Sequence[Path] = (),
) -> ProcessResult:
    """Run untrusted ``argv`` in ``cwd`` with ``env``; nothing it starts outlives the call.

    The program runs under the containment launcher (a child subreaper that kills every
    descendant, including one that left the process group, when the program exits or is
    stopped); the whole group is also killed at exit and at ``timeout_s``. With ``sandbox``,
    it runs in bubblewrap too, as far as this machine allows (see :mod:`lorelab.io._sandbox`):
    writes confined to ``cwd``, ``writable`` and a private ``/tmp``, no network, its own PID
    namespace. ``result.sandbox`` says what it really got.

    Stdin is empty; stdout and stderr share one pipe, of which the last ``tail_bytes`` are kept
    (all of it is hashed and counted). A program that cannot be started raises ``OSError``.
    In a cancelled :class:`ProcessScope` nothing starts (or a killed run's result is not
    returned): :class:`ExecutionCancelled` is raised.
    """
    scope = current_scope()
    if scope is not None:
        scope.check()
    environment = dict(env)
    program = resolve_program(argv, cwd, environment)
    launch = contained_argv(argv, program=program, cwd=cwd, sandbox=sandbox, writable=writable)
    status_read, status_write = os.pipe()
    environment[STATUS_FD_ENV] = str(status_write)
    options = _Options(
        timeout_s=timeout_s,
        input_bytes=None,
        max_stdout=None,
        tail_bytes=tail_bytes,
        new_session=True,
        drain_grace_s=_RUN_DRAIN_GRACE_S,
        scope=scope,
        launcher=True,
        pid_namespace=launch.pid_namespace,
        status_fd=status_write,
    )
    try:
        with adopting_orphans():
            result = _supervise(
                argv,
                launch_argv=launch.argv,
                cwd=cwd,
                env=environment,
                executable=None,
                options=options,
                sandbox=launch.sandbox,
                status_read=status_read,
            )
    except _SpawnError as failure:
        raise failure.error from None
    finally:
        with contextlib.suppress(OSError):
            os.close(status_read)
    if scope is not None:
        # A run killed by a cancel is not a test outcome: never report it as one.
        scope.check()
    return result


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    input_bytes: bytes | None,
    timeout_s: float,
    max_stdout: int,
    stderr_tail: int = DEFAULT_STDERR_TAIL,
    env: Mapping[str, str] | None = None,
    executable: str | None = None,
    new_session: bool = True,
) -> ProcessResult:
    """Run ``argv`` (never through a shell) and return what happened; never raises for the child.

    ``input_bytes`` is written to stdin, which is then closed (``None``: stdin is /dev/null).
    Stdout is kept up to ``max_stdout`` bytes; one byte more stops the read and kills the child.
    ``executable`` runs that file with ``argv`` unchanged (``argv[0]`` stays as declared). With
    ``new_session=False`` the child stays in the caller's group (an adapter's tool, so the
    transport's kill of the adapter's group reaches it) and only the child itself is killed.
    """
    options = _Options(
        timeout_s=timeout_s,
        input_bytes=input_bytes,
        max_stdout=max_stdout,
        tail_bytes=stderr_tail,
        new_session=new_session,
        drain_grace_s=0.0,
        scope=None,
    )
    start = time.monotonic()
    try:
        return _supervise(
            argv, launch_argv=argv, cwd=cwd, env=env, executable=executable, options=options
        )
    except _SpawnError as failure:
        exc = failure.error
        return ProcessResult(
            argv=tuple(argv),
            spawned=False,
            spawn_error=f"{argv[0] if argv else '(empty argv)'}: {exc.strerror or exc}",
            returncode=None,
            timed_out=False,
            duration_ms=int((time.monotonic() - start) * 1000),
            stdout=b"",
            stdout_overflow=False,
            output_tail=b"",
            output_sha256=hashlib.sha256().hexdigest(),
            output_bytes=0,
        )
