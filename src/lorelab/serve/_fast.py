"""The hooks' fast path: hand ``lorelab hooks run EVENT`` to the user's own running
``lorelab serve``.

A hook is a short process an agent starts on every prompt and tool call; loading the store
in it costs far more than the hook's work. When the user's state directory names a running
server for the hook's memory home, the hook sends its payload there and prints the server's
answer: the server runs the same handler on the same store. This module uses the standard
library only (no pydantic, click or numpy: that is the point), and speaks just enough HTTP.

A hook trusts only a server that proves it is the user's own, before it sends anything:

- the server's address, token and proof key are read only from the user's private state
  directory (``lorelab._state``: 0700, owned by the user, not through a symlink), never from a
  project tree;
- on one connection, the hook sends a random nonce (``GET /proof``) and the server must answer
  HMAC-SHA256(proof key, nonce); only then, on the same connection, does the hook send its
  token and payload. A listener that took over the port of a dead server gets the nonce only;
- no environment value is sent: only the payload, the project directory the agent named and
  the transcript's last assistant message (read here, by the user's own process);
- what the server prints passes the rules of a local answer (``lorelab.hooks._answer``);
- the whole exchange has one deadline (:data:`DEADLINE_SECONDS`), however a server trickles.

``NotHandled`` means "not handled here": no server, one that is gone or fails the proof, a
deadline passed before the payload was sent, or a refusal before the hook ran (401, 403, 400,
503). The caller then handles the hook in-process, as without a server. A proven server that
took the payload but did not answer by the deadline is not retried in-process (the hook may
have run): the hook answers nothing, as the in-process path does on a failure.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any, Final

from lorelab._state import NotPrivate, read_json, server_file

DEADLINE_SECONDS: Final = 2.0
"""The whole exchange with a server, connection to answer; past it the hook goes on without."""
DEADLINE_ENV: Final = "LORELAB_HOOK_SERVER_DEADLINE_S"
"""Raises or lowers :data:`DEADLINE_SECONDS` for a slow machine (the user's own setting)."""
PROOF_PATH: Final = "/proof"
PROOF_CONTEXT: Final = b"lorelab-serve-proof/1\n"
MAX_ANSWER_BYTES: Final = 1024 * 1024
NO_ANSWER: Final = ""


class NotHandled(Exception):
    """Why the server did not take the hook (logged when ``--via-server`` asked for it)."""


class NoAnswer(TimeoutError):
    """The proven server took the hook but did not answer by the deadline."""


def proof(key: bytes, nonce: bytes) -> str:
    """What a server holding ``key`` answers to ``nonce``."""
    return hmac.new(key, PROOF_CONTEXT + nonce, hashlib.sha256).hexdigest()


def home_for(raw: bytes, environ: dict[str, str]) -> Path:
    """The memory home the in-process handler would use for this payload."""
    configured = environ.get("LORELAB_HOME")
    if configured:
        return Path(configured)
    project = project_dir(environ)
    if project is not None:
        return Path(project) / ".lorelab"
    try:
        cwd = json.loads(raw).get("cwd")
    except (ValueError, AttributeError, RecursionError):
        cwd = None
    if isinstance(cwd, str) and os.path.isabs(cwd):
        return Path(cwd) / ".lorelab"
    return Path.cwd() / ".lorelab"


def project_dir(environ: dict[str, str]) -> str | None:
    """The project directory the agent named (``CLAUDE_PROJECT_DIR``, ``GEMINI_PROJECT_DIR``)."""
    for variable in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        candidate = environ.get(variable)
        if candidate and os.path.isabs(candidate) and os.path.isdir(candidate):
            return candidate
    return None


def _state(home: Path) -> dict[str, Any]:
    path = server_file(home)
    try:
        state = read_json(path)
    except NotPrivate as exc:
        raise NotHandled(f"no server of this user for {home}: {exc}") from None
    key = state.get("proof_key")
    try:
        usable = isinstance(key, str) and len(bytes.fromhex(key)) >= 16
    except ValueError:
        usable = False
    if not isinstance(state.get("url"), str) or not usable:
        raise NotHandled(f"{path}: has no url and proof key; ignored")
    return state


def _address(url: str) -> tuple[str, str, int]:
    scheme, _, rest = url.partition("://")
    hostport = rest.split("/", 1)[0]
    if hostport.startswith("["):
        host, _, port = hostport[1:].partition("]:")
    else:
        host, _, port = hostport.rpartition(":")
    if scheme not in ("http", "https") or not host or not port.isdigit():
        raise NotHandled(f"server url {url!r}: not http(s)://HOST:PORT; ignored")
    return scheme, host, int(port)


class _Exchange:
    """One connection to a server, every step of it under one monotonic deadline."""

    def __init__(self, state: dict[str, Any], seconds: float) -> None:
        self.url: str = state["url"]
        self.deadline = time.monotonic() + seconds
        scheme, self.host, port = _address(self.url)
        self.hostport = f"[{self.host}]:{port}" if ":" in self.host else f"{self.host}:{port}"
        try:
            sock = socket.create_connection((self.host, port), timeout=self.remaining())
        except OSError as exc:
            raise NotHandled(f"no server at {self.url}: {exc}") from None
        if scheme == "https":
            import ssl

            try:
                context = ssl.create_default_context(cafile=state.get("tls_cafile"))
                sock.settimeout(self.remaining())
                sock = context.wrap_socket(sock, server_hostname=self.host)
            except (OSError, ValueError) as exc:  # nothing was sent: the hook runs in-process
                sock.close()
                raise NotHandled(f"no TLS session with {self.url}: {exc}") from None
        self.sock = sock
        self.buffer = b""

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the hook's deadline passed")
        return left

    def send(self, head: list[str], body: bytes = b"") -> None:
        self.sock.settimeout(self.remaining())
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    def _fill(self) -> bool:
        """Read what has arrived into the buffer; ``False`` at the end of the stream."""
        self.sock.settimeout(self.remaining())  # each receive only gets what is left
        chunk = self.sock.recv(65536)
        if len(self.buffer) + len(chunk) > MAX_ANSWER_BYTES:
            raise NotHandled(f"server at {self.url} answered more than {MAX_ANSWER_BYTES} bytes")
        self.buffer += chunk
        return bool(chunk)

    def response(self) -> tuple[int, bytes]:
        """The status and body of the next response (to the end of the stream without a
        ``Content-Length``)."""
        while b"\r\n\r\n" not in self.buffer:
            if not self._fill():
                raise NotHandled(f"server at {self.url} closed before it answered")
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status_line, *lines = head.split(b"\r\n")
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise NotHandled(f"server at {self.url} answered no HTTP status")
        length = None
        for line in lines:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length" and value.strip().isdigit():
                length = int(value.strip())
        if length is None:
            while self._fill():
                pass
            body, self.buffer = self.buffer, b""
        else:
            while len(self.buffer) < length:
                if not self._fill():
                    raise NotHandled(f"server at {self.url} closed in the middle of an answer")
            body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(parts[1]), body

    def close(self) -> None:
        self.sock.close()


def _deadline_seconds(environ: dict[str, str]) -> float:
    try:
        chosen = float(environ.get(DEADLINE_ENV, ""))
    except ValueError:
        return DEADLINE_SECONDS
    return chosen if 0 < chosen < 3600 else DEADLINE_SECONDS


def _prove(exchange: _Exchange, key: bytes) -> None:
    """The server's proof that it holds ``key``, before anything else is sent."""
    nonce = secrets.token_bytes(32)
    exchange.send(
        [
            f"GET {PROOF_PATH} HTTP/1.1",
            f"Host: {exchange.hostport}",
            f"X-Lorelab-Nonce: {nonce.hex()}",
        ]
    )
    status, content = exchange.response()
    try:
        answered = json.loads(content).get("proof") if status == 200 else None
    except (ValueError, AttributeError, RecursionError):
        answered = None
    if not isinstance(answered, str) or not hmac.compare_digest(answered, proof(key, nonce)):
        raise NotHandled(
            f"the listener at {exchange.url} did not prove it is this user's server "
            f"(HTTP {status}); nothing was sent to it"
        )


def _body(agent: str, event: str, raw: bytes, environ: dict[str, str]) -> bytes:
    """The payload, after one line of what the hook found itself (never an environment value)."""
    from lorelab.hooks._agents import AGENTS

    spec = AGENTS[agent].event(event)
    facts: dict[str, str | None] = {"project": project_dir(environ), "lastAssistantText": None}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    transcript = data.get("transcript_path") if isinstance(data, dict) else None
    if isinstance(transcript, str) and spec is not None and spec.action == "pre_compact":
        from lorelab.hooks._answer import TRANSCRIPT_TEXT_LIMIT
        from lorelab.hooks._payload import last_assistant_text

        text = last_assistant_text(transcript)
        facts["lastAssistantText"] = None if text is None else text[:TRANSCRIPT_TEXT_LIMIT]
    return json.dumps(facts).encode() + b"\n" + raw


def through_server(agent: str, event: str, raw: bytes, environ: dict[str, str]) -> str:
    """The hook's answer from the user's running server; ``NotHandled`` when it did not take it.

    :class:`NoAnswer` when the proven server took it but did not answer by the deadline."""
    try:
        home = home_for(raw, environ)
    except OSError as exc:  # the directory the hook was started in is gone
        raise NotHandled(f"no memory home: {exc}") from None
    state = _state(home)
    key = bytes.fromhex(state["proof_key"])
    body = _body(agent, event, raw, environ)
    exchange = _Exchange(state, _deadline_seconds(environ))
    try:
        try:
            _prove(exchange, key)
            head = [
                f"POST /hooks/{agent}/{event} HTTP/1.1",
                f"Host: {exchange.hostport}",
                "Content-Type: application/octet-stream",
                f"Content-Length: {len(body)}",
                "Connection: close",
            ]
            token = state.get("token")
            if isinstance(token, str):
                head.append(f"Authorization: Bearer {token}")
            exchange.send(head, body)
        except OSError as exc:  # the deadline, or the connection closed: nothing of it ran
            raise NotHandled(f"server at {exchange.url}: {exc}") from None
        try:
            status, content = exchange.response()
        except OSError as exc:
            raise NoAnswer(f"server at {exchange.url} took the hook but: {exc}") from None
    finally:
        exchange.close()
    if status != 200:
        raise NotHandled(f"server at {exchange.url} refused the hook: HTTP {status}")
    from lorelab.hooks._agents import AGENTS
    from lorelab.hooks._answer import answer, served_context

    printed = content.decode("utf-8", errors="replace")
    return answer(AGENTS[agent], event, served_context(event, printed))
