"""The hooks' fast path: hand ``lorelab hooks run EVENT`` to the project's running
``lorelab serve``.

A hook is a short process an agent starts on every prompt and tool call; loading the store
in it costs far more than the hook's work. When ``<home>/serve.json`` names a running server,
the hook sends its payload there over one HTTP/1.1 request and prints the server's answer: the
server runs the same handler on the same store. This module uses the standard library only
(no pydantic, click or numpy: that is the point), and speaks just enough HTTP for it.

``None`` means "not handled here": no ``serve.json``, a server that is gone, or a refusal
before the hook ran (401, 403, 400). The caller then handles the hook in-process, as without a
server. A server that took the request but did not answer in time is not retried in-process
(the hook may have run): the hook answers nothing, as the in-process path does on a failure.
"""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import Any, Final

STATE_NAME: Final = "serve.json"
CONNECT_SECONDS: Final = 0.5
ANSWER_SECONDS: Final = 30.0
FORWARDED_PREFIXES: Final = ("CLAUDE_", "GEMINI_", "CODEX_", "LORELAB_")
"""The environment a hook handler reads (the agents' project variables, lorelab's own)."""
NO_ANSWER: Final = ""


class NotHandled(Exception):
    """Why the server did not take the hook (logged when ``--via-server`` asked for it)."""


def home_for(raw: bytes, environ: dict[str, str]) -> Path:
    """The memory home the in-process handler would use for this payload."""
    configured = environ.get("LORELAB_HOME")
    if configured:
        return Path(configured)
    for variable in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        candidate = environ.get(variable)
        if candidate and os.path.isabs(candidate) and os.path.isdir(candidate):
            return Path(candidate) / ".lorelab"
    try:
        cwd = json.loads(raw).get("cwd")
    except (ValueError, AttributeError, RecursionError):
        cwd = None
    if isinstance(cwd, str) and os.path.isabs(cwd):
        return Path(cwd) / ".lorelab"
    return Path.cwd() / ".lorelab"


def _state(home: Path) -> dict[str, Any]:
    path = home / STATE_NAME
    try:
        info = path.stat()
    except OSError:
        raise NotHandled(f"no server: {path} does not exist") from None
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise NotHandled(f"{path}: not private to this user (mode 0600 expected); ignored")
    try:
        state = json.loads(path.read_bytes())
    except (OSError, ValueError):
        raise NotHandled(f"{path}: not readable JSON; ignored") from None
    if not isinstance(state, dict) or not isinstance(state.get("url"), str):
        raise NotHandled(f"{path}: has no url; ignored")
    return state


def _address(url: str) -> tuple[str, str, int]:
    scheme, _, rest = url.partition("://")
    hostport = rest.split("/", 1)[0]
    if hostport.startswith("["):
        host, _, port = hostport[1:].partition("]:")
    else:
        host, _, port = hostport.rpartition(":")
    if scheme not in ("http", "https") or not host or not port.isdigit():
        raise NotHandled(f"serve.json url {url!r}: not http(s)://HOST:PORT; ignored")
    return scheme, host, int(port)


def _request(state: dict[str, Any], path: str, body: bytes) -> tuple[int, bytes]:
    scheme, host, port = _address(state["url"])
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_SECONDS)
    except OSError as exc:
        raise NotHandled(f"no server at {state['url']}: {exc}") from None
    if scheme == "https":
        import ssl

        try:
            context = ssl.create_default_context(cafile=state.get("tls_cafile"))
            sock = context.wrap_socket(sock, server_hostname=host)
        except (OSError, ValueError) as exc:  # nothing was sent: the hook runs in-process
            sock.close()
            raise NotHandled(f"no TLS session with {state['url']}: {exc}") from None
    token = state.get("token")
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}" if ":" not in host else f"Host: [{host}]:{port}",
        "Content-Type: application/octet-stream",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if isinstance(token, str):
        head.append(f"Authorization: Bearer {token}")
    with sock:
        sock.settimeout(ANSWER_SECONDS)
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        except OSError as exc:
            raise NotHandled(f"server at {state['url']} closed the connection: {exc}") from None
        chunks = []
        while True:
            chunk = sock.recv(65536)  # a timeout here raises: the hook may have run
            if not chunk:
                break
            chunks.append(chunk)
    response = b"".join(chunks)
    status_line, _, rest = response.partition(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise NotHandled(f"server at {state['url']} answered no HTTP status")
    _headers, _, content = rest.partition(b"\r\n\r\n")
    return int(parts[1]), content


def through_server(agent: str, event: str, raw: bytes, environ: dict[str, str]) -> str:
    """The hook's answer from the running server; ``NotHandled`` when it did not take it.

    ``TimeoutError`` (an ``OSError``) when the server took it but did not answer in time."""
    state = _state(home_for(raw, environ))
    forwarded = {
        key: value
        for key, value in environ.items()
        if key.startswith(FORWARDED_PREFIXES) and key != "LORELAB_HOME"
    }
    body = json.dumps(forwarded).encode() + b"\n" + raw
    status, content = _request(state, f"/hooks/{agent}/{event}", body)
    if status != 200:
        raise NotHandled(f"server at {state['url']} refused the hook: HTTP {status}")
    return content.decode("utf-8", errors="replace")
