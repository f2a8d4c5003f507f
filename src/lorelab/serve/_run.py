"""Running ``lorelab serve``: the checks before binding, the lock, the state file, shutdown.

One server per store: the server holds an exclusive ``flock`` on ``<home>/serve.lock`` for its
whole life (the kernel drops it if the process dies, so a killed server never blocks the next).
At every start it makes, in memory only, a write token named ``local`` and a proof key, and
writes them with its address to the user's private state directory (``lorelab._state``) for
the hooks, once every worker process (``lorelab.serve._workers``, which gets both on its stdin)
accepts; the file is withdrawn at shutdown, and a killed server's token and key die with it.
SIGTERM stops it gracefully: no new connection is accepted and requests in flight finish.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import logging
import os
import secrets
import socket
import ssl
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Final

from lorelab._state import (
    SERVERS,
    NotPrivate,
    private_dir,
    read_json,
    refuse_untrusted_home,
    server_file,
    write_private,
)
from lorelab.errors import InputFileError, PreflightError, UsageError
from lorelab.memory import SqliteMemoryStore, open_store, store_path
from lorelab.serve._admission import Limits
from lorelab.serve._dispatch import Dispatcher
from lorelab.serve._tokens import LOCAL_TOKEN, TOKEN_PREFIX, list_tokens, revoke_token
from lorelab.serve._workers import (
    Secrets,
    Workers,
    WorkerSpec,
    log_to_stderr,
    serve_socket,
    share_query_vectors,
    usable_cores,
)

LOCK_NAME: Final = "serve.lock"
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


NO_AUTH_ADDRESSES: Final = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
"""The only addresses ``--no-auth`` serves: this machine's own, never another 127/8 address."""


def listen_address(host: str) -> str:
    """``host`` as the socket will bind it: an IP address in its one canonical spelling
    (``[::1]``, ``::0001`` and ``0:0:0:0:0:0:0:1`` are ``::1``; ``127.1`` and
    ``127.000.000.001`` are ``127.0.0.1``), or a name as given."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    try:  # the C library's own numeric forms (what bind would accept): no name lookup
        found = socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return bare
    return str(ipaddress.ip_address(found[0][4][0]))


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost`` or a loopback address, any
    spelling)."""
    address = listen_address(host)
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _no_auth_allowed(host: str) -> bool:
    try:
        return ipaddress.ip_address(listen_address(host)) in NO_AUTH_ADDRESSES
    except ValueError:
        return False


def _no_password() -> bytes:
    # An encrypted key would make OpenSSL ask on the terminal; none is given, so it is refused.
    return b""


def _check_tls(options: ServeOptions) -> None:
    """Refuse, before anything is created or printed, TLS files that cannot serve."""
    cert, key = options.tls_cert, options.tls_key
    if (cert is None) != (key is None):
        raise UsageError("--tls-cert and --tls-key: give both, or neither")
    for flag, value in (("--tls-cert", cert), ("--tls-key", key)):
        if value is not None and not Path(value).is_file():
            raise InputFileError(f"{flag} {value}: not a readable file")
    if cert is None:
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:  # what uvicorn will do with them, done here so that a bad file is one line
        context.load_cert_chain(cert, key, password=_no_password)
    except ssl.SSLError as exc:
        raise InputFileError(
            f"--tls-cert {cert} --tls-key {key}: not a PEM certificate and its unencrypted "
            f"private key ({exc.reason or exc})"
        ) from None
    except OSError as exc:
        raise InputFileError(f"--tls-cert {cert} --tls-key {key}: {exc.strerror}") from None


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


def _loopback_names(sock: socket.socket, host: str) -> tuple[str, ...] | None:
    """The names a loopback server answers to besides its addresses (``None``: not loopback).

    Decided by the address the socket was bound to, whatever ``--host`` spelled or named."""
    if not ipaddress.ip_address(sock.getsockname()[0].partition("%")[0]).is_loopback:
        return None
    return ("localhost",) if host == "localhost" else ("localhost", host)


def _client_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to ``host``."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def _listening(options: ServeOptions, port: int) -> str:
    """Where the server listens, as started: every address for 0.0.0.0 or ::, then the URL a
    client on this machine uses."""
    url = f"{_url(options, port)}/mcp"
    if options.host in ("0.0.0.0", "", "::"):
        bound = "[::]" if options.host == "::" else "0.0.0.0"
        every = "every IPv6 address" if options.host == "::" else "every IPv4 address"
        return f"listening on {every} ({bound}:{port}); on this machine {url}"
    return url


def _url(options: ServeOptions, port: int) -> str:
    host = _client_host(options.host)
    shown = f"[{host}]" if ":" in host else host
    scheme = "https" if options.tls_cert else "http"
    return f"{scheme}://{shown}:{port}"


def _check_state_dir() -> None:
    """Refuse a state directory for the hooks that is not private (made if missing)."""
    try:
        private_dir(SERVERS, create=True)
    except NotPrivate as exc:
        raise PreflightError(f"the state directory for the hooks is not private: {exc}") from None


def _write_state(
    home: Path, options: ServeOptions, port: int, token: str | None, proof_key: bytes
) -> Path:
    """Tell the user's hooks where this server is, in the user's private state directory."""
    state = {
        "url": _url(options, port),
        "token": token,
        "proof_key": proof_key.hex(),
        "pid": os.getpid(),
        "home": str(home),
        "tls_cafile": None if options.tls_cert is None else str(Path(options.tls_cert).resolve()),
    }
    _check_state_dir()
    path = server_file(home)
    write_private(path, json.dumps(state, indent=2).encode() + b"\n")
    return path


def _remove_state(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError, NotPrivate):
        if read_json(path).get("pid") == os.getpid():
            path.unlink()


def _revoke_stored_local(store_file: Path) -> None:
    """Revoke a ``local`` token an earlier release stored (this one keeps it in memory only)."""
    if any(t.name == LOCAL_TOKEN and t.revoked_at is None for t in list_tokens(store_file)):
        revoke_token(store_file, LOCAL_TOKEN)


def _refuse_unsafe_bind(options: ServeOptions, store_file: Path) -> None:
    """Refuse, before anything is created, a bind that would serve others without tokens."""
    if options.no_auth and not _no_auth_allowed(options.host):
        raise PreflightError(
            f"--host {options.host}: --no-auth serves only 127.0.0.1 or ::1 (any spelling); "
            "other addresses, other 127/8 ones and names included, need tokens"
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


def _refuse_untrusted_home(options: ServeOptions, home: Path) -> None:
    """A project's ``.lorelab`` the user did not make is not served to the hooks unasked."""
    refuse_untrusted_home(home, named=options.home is not None)


def run_server(options: ServeOptions) -> None:
    """Serve until SIGTERM or Ctrl-C (blocking)."""
    log_to_stderr()
    _check_tls(options)
    project_dir = Path(options.project) if options.project is not None else Path.cwd()
    if not project_dir.is_dir():
        raise InputFileError(
            f"project directory {project_dir}: does not exist or is not a directory"
        )
    found = store_path(options.home, project_dir)
    _refuse_unsafe_bind(options, found)
    _refuse_untrusted_home(options, found.parent)
    options = replace(options, host=listen_address(options.host))
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
    _revoke_stored_local(store_file)
    # The hooks' token and the proof key live in these processes and the private state file
    # only: a server killed with SIGKILL takes both with it (its workers die with it).
    token = None if options.no_auth else TOKEN_PREFIX + secrets.token_urlsafe(32)
    keys = Secrets(token=token, proof_key=secrets.token_bytes(32))
    spec = WorkerSpec(
        store_file=str(store_file),
        home=str(home),
        project_dir=str(project_dir.resolve()),
        host=options.host,
        no_auth=options.no_auth,
        tls_cert=options.tls_cert,
        tls_key=options.tls_key,
        allow_checks=options.allow_checks,
        loopback_names=_loopback_names(sock, options.host),
        in_flight=options.limits.in_flight,
        queued=options.limits.queued,
        queue_seconds=options.limits.queue_seconds,
        retry_after_seconds=options.limits.retry_after_seconds,
        body_seconds=options.limits.body_seconds,
    )
    port = sock.getsockname()[1]
    _check_state_dir()  # before any worker starts: refused here, nothing is left to stop
    count = options.workers if options.workers is not None else usable_cores()
    workers = Workers.start(spec, keys, count - 1)
    # With workers, this process alone accepts and hands each connection to the process with
    # the fewest open ones (lorelab.serve._dispatch); alone, it accepts for itself.
    source = Dispatcher(sock, workers.channels) if workers.processes else sock

    def started() -> None:
        """Every process accepts: tell the hooks where (the private state file) only now."""
        _write_state(home, options, port, token, keys.proof_key)
        sys.stderr.write(
            f"lorelab serve: {_listening(options, port)} for {store_file}"
            f"{' (no auth: loopback only)' if options.no_auth else ''}"
            f" ({count} worker{'s' if count != 1 else ''})\n"
        )
        sys.stderr.flush()

    try:
        share_query_vectors(store)
        store.load_model()  # while the workers load theirs: no call pays for it
        workers.wait_ready()
        serve_socket(spec, keys, store, source, workers.terminate, started)
    finally:
        workers.stop()
        _remove_state(server_file(home))
        store.remove_shared_query_vectors()  # every worker has stopped
        sock.close()
