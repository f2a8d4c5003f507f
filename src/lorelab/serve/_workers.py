"""The worker processes of ``lorelab serve``: one per core, all serving one socket.

A Python process runs one call's Python at a time, so one process uses about one core. The
server (the *supervisor*: the process that holds the store's lock and writes the hooks' state
file in the user's private state directory) binds the socket, serves it itself and starts
``workers - 1`` more processes. The supervisor alone accepts: it hands each new connection to
the process, itself included, with the fewest open connections (:mod:`lorelab.serve._dispatch`;
left to the kernel, one process would often take a burst of connections whole). Each process
opens its own connection to the one WAL store (SQLite serialises their writes; every answered
record was committed before its answer, whichever process wrote it) and runs its own admission
control with the same limits: at most ``--max-in-flight`` requests run and
``--max-queue`` wait *per process*.

Every process answers with the same ``local`` token and proof key, so a hook's proof verifies
whichever process takes its connection. The supervisor makes both in memory and hands them to
each worker through the worker's stdin, a pipe only the two hold: never argv or the environment,
which other users may read in the process list or ``/proc``. A worker's argv holds only file
descriptor numbers, the supervisor's pid and the non-secret :class:`WorkerSpec`.

A SIGTERM (or Ctrl-C) to the supervisor is passed on to every worker: each refuses its queue,
finishes what it has in flight and exits; the supervisor waits for them (bounded) before it
withdraws the state file. The workers run in their own process group, so a Ctrl-C at a terminal
reaches them once, through the supervisor; each asks the kernel to SIGKILL it if the
supervisor dies, so a killed server leaves no process behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Final

from lorelab.errors import PreflightError
from lorelab.serve._admission import Admission, Limits
from lorelab.serve._dispatch import Adopter, Dispatcher, Receiver, channel_pair
from lorelab.serve._tokens import TokenBook

if TYPE_CHECKING:
    from lorelab.memory import SqliteMemoryStore

LOG: Final = logging.getLogger("lorelab.serve")
GRACEFUL_SECONDS: Final = 5
"""How long requests in flight may take to finish once a process is asked to stop."""
SWITCH_INTERVAL_S: Final = 0.001
"""How long a thread of a serving process keeps the GIL while another waits for it (Python's
default is 5 ms). A call's tool runs in a thread; its answer goes out through the event loop,
which would otherwise wait up to 5 ms for the GIL behind another call's Python (docs/serve.md,
"Issue 44, fourth round")."""
STOP_SECONDS: Final = 60.0
"""How long the supervisor waits for its workers to exit before it kills them."""
READY_SECONDS: Final = 300.0
"""How long the supervisor waits for its workers to accept (a loaded machine is slow)."""
_PR_SET_PDEATHSIG: Final = 1


def log_to_stderr() -> None:
    """One line per refused request or failed tool on stderr, as ``lorelab mcp`` does."""
    for name in ("lorelab.serve", "lorelab.mcp"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("lorelab serve: %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.WARNING)
            logger.propagate = False


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What a worker process serves: the supervisor's resolved choices (no secret: argv)."""

    store_file: str
    home: str
    project_dir: str
    host: str
    no_auth: bool
    tls_cert: str | None
    tls_key: str | None
    allow_checks: bool
    loopback_names: tuple[str, ...] | None
    """The names a loopback server answers to besides its addresses (None: not loopback)."""
    in_flight: int
    queued: int
    queue_seconds: float
    retry_after_seconds: int
    body_seconds: float

    @property
    def limits(self) -> Limits:
        return Limits(
            in_flight=self.in_flight,
            queued=self.queued,
            queue_seconds=self.queue_seconds,
            retry_after_seconds=self.retry_after_seconds,
            body_seconds=self.body_seconds,
        )

    @classmethod
    def from_json(cls, payload: str) -> WorkerSpec:
        fields = json.loads(payload)
        names = fields["loopback_names"]
        fields["loopback_names"] = None if names is None else tuple(names)
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class Secrets:
    """What every process must hold alike and nobody else may see: the hooks' ``local`` token
    (None: ``--no-auth``) and the proof key. Passed to a worker on its stdin only."""

    token: str | None
    proof_key: bytes = field(repr=False)

    def encode(self) -> bytes:
        return json.dumps({"token": self.token, "proof_key": self.proof_key.hex()}).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Secrets:
        fields = json.loads(raw)
        return cls(token=fields["token"], proof_key=bytes.fromhex(fields["proof_key"]))


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, whose SIGTERM also closes admission (the queue is refused at once),
        stops taking connections and is passed on (``on_exit``: the supervisor's workers).
        With a ``source`` (:mod:`lorelab.serve._dispatch`) it listens on no socket itself: it
        serves the connections the source hands it."""

        def __init__(
            self,
            config: uvicorn.Config,
            admission: Admission,
            on_exit: Callable[[], None],
            on_started: Callable[[], None],
            source: Dispatcher | Receiver | None,
        ) -> None:
            super().__init__(config)
            self.admission = admission
            self.on_exit = on_exit
            self.on_started = on_started
            self.source = source

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets if self.source is None else [])
            if self.source is not None and self.started:
                loop = asyncio.get_running_loop()
                # What uvicorn's own listener makes for each connection.
                factory = functools.partial(
                    self.config.http_protocol_class,  # type: ignore[call-arg]
                    config=self.config,
                    server_state=self.server_state,
                    app_state=self.lifespan.state,
                )
                self.source.start(
                    loop, Adopter(loop, factory, self.config.ssl, self.source.closed_here)
                )
            if self.started and not self.should_exit:
                self.on_started()

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            # A signal handler: hand the work to the event loop rather than do it here.
            try:
                asyncio.get_running_loop().call_soon_threadsafe(self._stop_taking)
            except RuntimeError:
                self.on_exit()

        def _stop_taking(self) -> None:
            """Refuse the queue, hand out no more connections, then stop the workers (so none
            is handed a connection as it stops)."""
            self.admission.close()
            if self.source is not None:
                self.source.stop()
            self.on_exit()

    return Server


def serve_socket(
    spec: WorkerSpec,
    secrets: Secrets,
    store: SqliteMemoryStore,
    source: socket.socket | Dispatcher | Receiver,
    on_exit: Callable[[], None],
    on_started: Callable[[], None],
) -> None:
    """Serve ``store`` until SIGTERM or Ctrl-C (blocking): the connections ``source`` accepts
    (a listening socket) or hands over (:mod:`lorelab.serve._dispatch`); ``on_started`` once it
    serves, ``on_exit`` when asked to stop. The TLS files and the rest of the configuration are
    loaded before it serves, so whatever fails there fails unannounced."""
    import uvicorn

    from lorelab.hooks import run_hook
    from lorelab.serve._app import ServedLorelab, build_app

    home, project_dir = Path(spec.home), Path(spec.project_dir)
    book = None if spec.no_auth else TokenBook(Path(spec.store_file), local=secrets.token)
    try:
        server = ServedLorelab(store, home, project_dir, allow_checks=spec.allow_checks)
        app, admission = build_app(
            server,
            home=home,
            book=book,
            loopback_names=spec.loopback_names,
            run_hook=run_hook,
            limits=spec.limits,
            proof_key=secrets.proof_key,
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            ssl_certfile=spec.tls_cert,
            ssl_keyfile=spec.tls_key,
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
        )
        config.load()
        listening = isinstance(source, socket.socket)
        runner = _server_class()(
            config, admission, on_exit, on_started, None if listening else source
        )
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        runner.run(sockets=[source] if listening else None)
    finally:
        if book is not None:
            book.close()


class Workers:
    """The supervisor's worker processes (none when it serves alone)."""

    def __init__(
        self,
        processes: list[subprocess.Popen[bytes]],
        ready: list[int],
        channels: list[socket.socket],
    ) -> None:
        self.processes = processes
        self.ready = ready
        """The read end of each worker's readiness pipe (it writes one byte once it serves)."""
        self.channels = channels
        """The supervisor's end of each worker's connection channel (``_dispatch``)."""

    @classmethod
    def start(cls, spec: WorkerSpec, secrets: Secrets, count: int) -> Workers:
        """Start ``count`` workers, each given ``secrets`` on its stdin and a channel on which
        the supervisor hands it connections (see :meth:`wait_ready`)."""
        payload = json.dumps(asdict(spec))
        processes, ready, channels = [], [], []
        for _ in range(count):
            read, write = os.pipe()
            ours, theirs = channel_pair()
            argv = [str(theirs.fileno()), str(os.getpid()), str(write), payload]
            try:
                process = subprocess.Popen(
                    [sys.executable, "-m", "lorelab.serve._workers", *argv],
                    pass_fds=(theirs.fileno(), write),
                    stdin=subprocess.PIPE,
                    process_group=0,
                )
            except BaseException:
                ours.close()
                raise
            finally:
                os.close(write)
                theirs.close()
            processes.append(process)
            ready.append(read)
            channels.append(ours)
            _hand_over(process, secrets)
        return cls(processes, ready, channels)

    def wait_ready(self) -> None:
        """Wait until every worker accepts; PreflightError if one exits or is too slow."""
        deadline = time.monotonic() + READY_SECONDS
        try:
            for process, read in zip(self.processes, self.ready, strict=True):
                waiting, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
                if not waiting or os.read(read, 1) != b"r":
                    self.stop()
                    raise PreflightError(
                        f"worker process {process.pid} did not start serving "
                        f"(exit code {process.poll()}; its error is above)"
                    )
        finally:
            for read in self.ready:
                os.close(read)
            self.ready = []

    def terminate(self) -> None:
        """Ask every worker to stop (safe in a signal handler: it only sends signals)."""
        for process in self.processes:
            if process.returncode is None:
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signal.SIGTERM)

    def stop(self) -> None:
        """Ask every worker to stop and wait for each (killed after :data:`STOP_SECONDS`)."""
        self.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                LOG.warning("worker %d did not stop in %g s: killed", process.pid, STOP_SECONDS)
                process.kill()
                process.wait(timeout=STOP_SECONDS)
        for channel in self.channels:
            channel.close()


def _hand_over(process: subprocess.Popen[bytes], secrets: Secrets) -> None:
    """Write ``secrets`` to a worker's stdin and close it (a few hundred bytes: the pipe's
    buffer takes them whole). A worker that died first is reported by ``wait_ready``."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        process.stdin.write(secrets.encode())
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()


def share_query_vectors(store: SqliteMemoryStore) -> None:
    """Have ``store`` share its query vectors with the server's other processes, through a
    private file in the user's state directory (not shared when that cannot be made)."""
    from lorelab._state import NotPrivate, query_vectors_file

    try:
        store.share_query_vectors(query_vectors_file(store.location))
    except (NotPrivate, OSError) as exc:  # OSError: the directory cannot be made
        LOG.warning("query vectors not shared between the processes: %s", exc)


def _die_with(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux), and exit now if the
    parent is already gone."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        raise SystemExit(1)


def _report_ready(fd: int) -> Callable[[], None]:
    def ready() -> None:
        os.write(fd, b"r")
        os.close(fd)

    return ready


def main(argv: list[str]) -> int:
    """A worker: ``CHANNEL_FD PARENT_PID READY_FD SPEC_JSON``, its :class:`Secrets` on stdin."""
    fd, parent, ready, payload = int(argv[0]), int(argv[1]), int(argv[2]), argv[3]
    _die_with(parent)
    secrets = Secrets.decode(sys.stdin.buffer.read())
    from lorelab.memory import SqliteMemoryStore

    log_to_stderr()
    spec = WorkerSpec.from_json(payload)
    channel = socket.socket(fileno=fd)
    store = SqliteMemoryStore(Path(spec.store_file), create=False)
    try:
        share_query_vectors(store)
        store.load_model()
        serve_socket(spec, secrets, store, Receiver(channel), lambda: None, _report_ready(ready))
    finally:
        store.close()
        channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
