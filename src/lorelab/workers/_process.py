"""Run one child process with bounded stdout, a capped stderr tail and a hard deadline.

One thread multiplexes stdin, stdout, stderr and (on Linux) a pidfd, so a child that floods
stderr or never reads stdin cannot block the call. Stdout is read at most one byte past its
bound; reaching that byte stops the read and kills the child. In its own session, the child's
whole process group is killed at the deadline and once the child has exited, so nothing it
started outlives the call (a process that calls ``setsid`` itself escapes the group; the
deadline still ends the call).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_CHUNK: Final = 64 * 1024
DEFAULT_STDERR_TAIL: Final = 8 * 1024


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What happened to one child process."""

    spawned: bool
    spawn_error: str | None
    returncode: int | None
    stdout: bytes
    stdout_overflow: bool
    stderr_tail: bytes
    stderr_bytes: int
    timed_out: bool
    duration_ms: int

    @property
    def exit_code(self) -> int | None:
        """The exit status when the child exited normally; ``None`` when a signal ended it."""
        if self.returncode is None or self.returncode < 0:
            return None
        return self.returncode

    @property
    def signal(self) -> int | None:
        """The signal that ended the child, if one did."""
        if self.returncode is None or self.returncode >= 0:
            return None
        return -self.returncode


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _kill(proc: subprocess.Popen[bytes], own_group: bool) -> None:
    """SIGKILL the child's process group (or only the child when it shares ours)."""
    if own_group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    else:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


class _Streams:
    """The state of the three pipes while the child runs."""

    def __init__(self, proc: subprocess.Popen[bytes], data: bytes, max_stdout: int, tail: int):
        self.proc = proc
        self.pending = memoryview(data)
        self.max_stdout = max_stdout
        self.tail = tail
        self.stdout = bytearray()
        self.overflow = False
        self.stderr = bytearray()
        self.stderr_bytes = 0

    def read_stdout(self, fd: int) -> bool:
        """Read one chunk; return False at EOF. Never reads past the bound's first extra byte."""
        try:
            chunk = os.read(fd, min(_CHUNK, self.max_stdout + 1 - len(self.stdout)))
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.stdout += chunk
        if len(self.stdout) > self.max_stdout:
            self.overflow = True
        return True

    def read_stderr(self, fd: int) -> bool:
        """Read one chunk, keeping only the last ``tail`` bytes; return False at EOF."""
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.stderr_bytes += len(chunk)
        self.stderr += chunk
        if len(self.stderr) > self.tail:
            del self.stderr[: len(self.stderr) - self.tail]
        return True

    def write_stdin(self, fd: int) -> bool:
        """Write one chunk of the input; return False when done or the child closed stdin."""
        try:
            written = os.write(fd, self.pending[:_CHUNK])
        except BlockingIOError:
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False
        self.pending = self.pending[written:]
        return bool(self.pending)

    def drain(self, fd: int, stdout: bool) -> None:
        """Read what is left without blocking (after the child exited or was killed)."""
        while _readable(fd):
            more = self.read_stdout(fd) if stdout else self.read_stderr(fd)
            if not more or (stdout and self.overflow):
                return


def _readable(fd: int) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(0))


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
    ``executable`` runs that file with ``argv`` unchanged (``argv[0]`` stays as declared).
    """
    start = time.monotonic()
    deadline = start + timeout_s
    try:
        proc = subprocess.Popen(
            list(argv),
            executable=executable,
            cwd=cwd,
            stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            start_new_session=new_session,
            close_fds=True,
        )
    except OSError as exc:
        return ProcessResult(
            spawned=False,
            spawn_error=f"{argv[0] if argv else '(empty argv)'}: {exc.strerror or exc}",
            returncode=None,
            stdout=b"",
            stdout_overflow=False,
            stderr_tail=b"",
            stderr_bytes=0,
            timed_out=False,
            duration_ms=int((time.monotonic() - start) * 1000),
        )
    assert proc.stdout is not None
    assert proc.stderr is not None
    streams = _Streams(proc, input_bytes or b"", max_stdout, stderr_tail)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    pidfd = _pidfd(proc.pid)
    timed_out = False
    exited = False
    open_pipes = {out_fd, err_fd}
    try:
        with selectors.DefaultSelector() as selector:
            for fd in (out_fd, err_fd):
                os.set_blocking(fd, False)
                selector.register(fd, selectors.EVENT_READ)
            if proc.stdin is not None:
                in_fd = proc.stdin.fileno()
                if streams.pending:
                    os.set_blocking(in_fd, False)
                    selector.register(in_fd, selectors.EVENT_WRITE)
                else:
                    proc.stdin.close()
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ)
            while True:
                if pidfd is None and not open_pipes:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(remaining):
                    fd = int(key.fd)
                    if fd == pidfd:
                        exited = True
                    elif fd == out_fd:
                        if not streams.read_stdout(fd):
                            selector.unregister(fd)
                            open_pipes.discard(fd)
                    elif fd == err_fd:
                        if not streams.read_stderr(fd):
                            selector.unregister(fd)
                            open_pipes.discard(fd)
                    elif not streams.write_stdin(fd):
                        selector.unregister(fd)
                        assert proc.stdin is not None
                        with contextlib.suppress(OSError):
                            proc.stdin.close()
                if streams.overflow or exited:
                    break
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM, a bug): the worker and its group never outlive us.
        _kill(proc, new_session)
        raise
    if streams.overflow or timed_out:
        _kill(proc, new_session)
    elif pidfd is None:
        # Without a pidfd the pipes closed first; wait for the exit within the deadline.
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill(proc, new_session)
    elif new_session:
        # The child has exited but is not yet reaped, so its group id cannot be reused yet.
        _kill(proc, new_session)
    if out_fd in open_pipes and not streams.overflow:
        streams.drain(out_fd, stdout=True)
    if err_fd in open_pipes:
        streams.drain(err_fd, stdout=False)
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    proc.stdout.close()
    proc.stderr.close()
    if pidfd is not None:
        os.close(pidfd)
    try:
        returncode: int | None = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        returncode = None
    return ProcessResult(
        spawned=True,
        spawn_error=None,
        returncode=returncode,
        stdout=bytes(streams.stdout),
        stdout_overflow=streams.overflow,
        stderr_tail=bytes(streams.stderr),
        stderr_bytes=streams.stderr_bytes,
        timed_out=timed_out,
        duration_ms=int((time.monotonic() - start) * 1000),
    )
