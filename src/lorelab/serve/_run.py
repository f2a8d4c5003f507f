"""Running ``lorelab serve``: the checks before binding, the lock, ``serve.json``, shutdown.

One server per store: the server holds an exclusive ``flock`` on ``<home>/serve.lock`` for its
whole life (the kernel drops it if the process dies, so a killed server never blocks the next).
It issues itself a write token named ``local`` at every start and writes it, with its address,
to ``<home>/serve.json`` (mode 0600) for the project's hooks; both are withdrawn at shutdown.
SIGTERM stops it gracefully: no new connection is accepted and requests in flight finish.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import logging
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from lorelab._cache import write_atomically
from lorelab.errors import InputFileError, PreflightError, UsageError
from lorelab.memory import SqliteMemoryStore, open_store, store_path
from lorelab.serve._admission import Limits
from lorelab.serve._tokens import LOCAL_TOKEN, create_token, list_tokens, revoke_token
from lorelab.serve._workers import (
    Workers,
    WorkerSpec,
    log_to_stderr,
    serve_socket,
    usable_cores,
)

LOCK_NAME: Final = "serve.lock"
STATE_NAME: Final = "serve.json"
LOG: Final = logging.getLogger("lorelab.serve")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What ``lorelab serve`` was asked to do."""

    home: str | None
    project: str | None
    host: str = "127.0.0.1"
    port: int = 8765
    no_auth: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    allow_checks: bool = False
    limits: Limits = field(default_factory=Limits)
    workers: int | None = None
    """Processes that serve (``--workers``); None: one per usable core."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_tls(options: ServeOptions) -> None:
    if (options.tls_cert is None) != (options.tls_key is None):
        raise UsageError("--tls-cert and --tls-key: give both, or neither")
    for flag, value in (("--tls-cert", options.tls_cert), ("--tls-key", options.tls_key)):
        if value is not None and not Path(value).is_file():
            raise InputFileError(f"{flag} {value}: not a readable file")


@contextlib.contextmanager
def store_lock(home: Path) -> Iterator[None]:
    """Hold the store's one-server lock, or refuse with the holder's pid."""
    path = home / LOCK_NAME
    handle: IO[str] = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise PreflightError(
                f"{home}: another lorelab serve (pid {holder}) already serves this store"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio sets TCP_NODELAY only on a connection whose socket
    # says it is TCP. Without it, Nagle holds a response's body until the client's delayed ACK
    # of its head, about 40 ms on every request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PreflightError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _client_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to ``host``."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def _url(options: ServeOptions, port: int) -> str:
    host = _client_host(options.host)
    shown = f"[{host}]" if ":" in host else host
    scheme = "https" if options.tls_cert else "http"
    return f"{scheme}://{shown}:{port}"


def _write_state(home: Path, options: ServeOptions, port: int, token: str | None) -> Path:
    state = {
        "url": _url(options, port),
        "token": token,
        "pid": os.getpid(),
        "tls_cafile": None if options.tls_cert is None else str(Path(options.tls_cert).resolve()),
    }
    path = home / STATE_NAME
    write_atomically(path, json.dumps(state, indent=2).encode() + b"\n")
    os.chmod(path, 0o600)
    return path


def _remove_state(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()


def _local_token(store_file: Path) -> str:
    """A fresh ``local`` token: the one a previous server left live is revoked first."""
    if any(t.name == LOCAL_TOKEN and t.revoked_at is None for t in list_tokens(store_file)):
        revoke_token(store_file, LOCAL_TOKEN)
    return create_token(store_file, LOCAL_TOKEN, "write")


def _refuse_unsafe_bind(options: ServeOptions, store_file: Path) -> None:
    """Refuse, before anything is created, a bind that would serve others without tokens."""
    if options.no_auth and not is_loopback(options.host):
        raise PreflightError(
            f"--host {options.host}: --no-auth serves only a loopback address "
            "(127.0.0.1, ::1, localhost); other addresses need tokens"
        )
    if options.no_auth or is_loopback(options.host):
        return
    if not store_file.exists() or not any(
        t.name != LOCAL_TOKEN and t.revoked_at is None for t in list_tokens(store_file)
    ):
        raise PreflightError(
            f"--host {options.host}: a non-loopback address needs a token: create one with "
            "`lorelab serve token create NAME --scope read|write|admin`"
        )


def run_server(options: ServeOptions) -> None:
    """Serve until SIGTERM or Ctrl-C (blocking)."""
    log_to_stderr()
    _check_tls(options)
    project_dir = Path(options.project) if options.project is not None else Path.cwd()
    if not project_dir.is_dir():
        raise InputFileError(
            f"project directory {project_dir}: does not exist or is not a directory"
        )
    _refuse_unsafe_bind(options, store_path(options.home, project_dir))
    store = open_store(options.home, project_dir)
    home = store.location.parent
    try:
        with store_lock(home):
            _serve_locked(options, store, home, project_dir)
    finally:
        store.close()


def _serve_locked(
    options: ServeOptions, store: SqliteMemoryStore, home: Path, project_dir: Path
) -> None:
    store_file = store.location
    sock = _bind(options.host, options.port)
    token = None if options.no_auth else _local_token(store_file)
    spec = WorkerSpec(
        store_file=str(store_file),
        home=str(home),
        project_dir=str(project_dir.resolve()),
        host=options.host,
        no_auth=options.no_auth,
        tls_cert=options.tls_cert,
        tls_key=options.tls_key,
        allow_checks=options.allow_checks,
        in_flight=options.limits.in_flight,
        queued=options.limits.queued,
        queue_seconds=options.limits.queue_seconds,
        retry_after_seconds=options.limits.retry_after_seconds,
    )
    port = sock.getsockname()[1]
    count = options.workers if options.workers is not None else usable_cores()
    workers = Workers.start(spec, sock, count - 1)

    def started() -> None:
        """Every process accepts: say where (``serve.json``) only now."""
        _write_state(home, options, port, token)
        sys.stderr.write(
            f"lorelab serve: {_url(options, port)}/mcp for {store_file}"
            f"{' (no auth: loopback only)' if options.no_auth else ''}"
            f" ({count} worker{'s' if count != 1 else ''})\n"
        )
        sys.stderr.flush()

    try:
        store.load_model()  # while the workers load theirs: no call pays for it
        workers.wait_ready()
        serve_socket(spec, store, sock, workers.terminate, started)
    finally:
        workers.stop()
        _remove_state(home / STATE_NAME)
        if token is not None:
            with contextlib.suppress(UsageError):
                revoke_token(store_file, LOCAL_TOKEN)
        sock.close()
