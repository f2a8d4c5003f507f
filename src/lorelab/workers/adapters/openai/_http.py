"""One bounded HTTP exchange with an OpenAI-compatible server, and the preflight connection.

Standard library only (``http.client``): one connection per request, the body read at most one
byte past its bound. The timeout is a total deadline on the whole exchange (connect, headers and
body), not a bound on each receive: every receive gets only the time left, so a server that
trickles a byte at a time cannot hold a call; at the deadline the connection is closed, so a
server that streams sees the client leave. A streamed reply (``text/event-stream``) is read
event by event under the same bounds. The API key goes only into the ``Authorization`` header
of a completion request; the preflight sends no key and asks for no completion.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import time
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import SplitResult, urlsplit

from lorelab.errors import UsageError

MIB: Final = 1024 * 1024
RESPONSE_LIMIT: Final = 8 * MIB
PREFLIGHT_TIMEOUT_S: Final = 10.0
USER_AGENT: Final = "lorelab-openai-adapter/1"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A declared base URL, split once: ``http(s)://host[:port][/path]``."""

    base_url: str
    scheme: str
    host: str
    port: int
    path: str

    def url(self, suffix: str) -> str:
        """The full URL of ``suffix`` (``/chat/completions``) under the base URL."""
        return f"{self.base_url}{suffix}"


def parse_base_url(text: str, flag: str = "--base-url") -> Endpoint:
    """Check and split a base URL; a key in it (user info, a query) is refused (exit 2)."""
    value = text.strip().rstrip("/")
    try:
        parts: SplitResult = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"{flag} {text!r}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{flag} {text!r}: expected http://HOST[:PORT]/PATH or https://...")
    if parts.username is not None or parts.password is not None:
        # A password in the URL would land in every receipt that records the endpoint.
        raise UsageError(f"{flag}: user info in the URL is refused; give the key by variable")
    if parts.query or parts.fragment:
        raise UsageError(f"{flag}: a query or fragment in the URL is refused (keys go by variable)")
    default_port = 443 if parts.scheme == "https" else 80
    return Endpoint(
        base_url=value,
        scheme=parts.scheme,
        host=parts.hostname,
        port=port if port is not None else default_port,
        path=parts.path,
    )


@dataclass(frozen=True, slots=True)
class HttpReply:
    """What the server answered: the status, and the body (``overflow``: past the bound).

    ``events`` holds the ``data:`` payloads of a streamed reply (``None`` when the reply was
    not a stream); their bytes count against the same bound as a body's."""

    status: int
    body: bytes
    overflow: bool
    events: tuple[bytes, ...] | None = None


class HttpFailure(Exception):
    """The exchange itself failed: no connection, a timeout, a broken reply."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _connection(endpoint: Endpoint, timeout_s: float) -> http.client.HTTPConnection:
    if endpoint.scheme == "https":
        return http.client.HTTPSConnection(endpoint.host, endpoint.port, timeout=timeout_s)
    return http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout_s)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "timed out"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text)


class _DeadlineReader(io.RawIOBase):
    """The socket's bytes, each receive bounded by the time left before the deadline (and none
    after it): http.client reads status, headers and body through it, so no trickle of bytes
    can stretch an exchange past its deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        # A socket file keeps the descriptor open after the connection drops its socket.
        self._file = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def close(self) -> None:
        self._file.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline passed")
        self._sock.settimeout(left)
        count: int | None = self._file.readinto(buffer)
        return count or 0


def _deadline_connection(endpoint: Endpoint, timeout_s: float) -> http.client.HTTPConnection:
    deadline = time.monotonic() + timeout_s
    connection = _connection(endpoint, timeout_s)

    def response(sock: socket.socket, *args: Any, **kwargs: Any) -> http.client.HTTPResponse:
        reply = http.client.HTTPResponse(sock, *args, **kwargs)
        reply.fp = io.BufferedReader(_DeadlineReader(sock, deadline))
        return reply

    connection.response_class = response  # type: ignore[assignment]
    return connection


def _read_events(response: http.client.HTTPResponse, limit: int) -> tuple[tuple[bytes, ...], bool]:
    """The ``data:`` payloads of a server-sent event stream, up to ``[DONE]`` or the end;
    ``True`` with them when the stream went past ``limit`` bytes (reading stops there)."""
    events: list[bytes] = []
    used = 0
    while True:
        line = response.readline(limit + 1)
        if not line:
            return tuple(events), False
        used += len(line)
        if used > limit:
            return tuple(events), True
        if not line.startswith(b"data:"):
            continue  # comments (": ping"), event names and blank separators
        data = line[5:].strip()
        if data == b"[DONE]":
            return tuple(events), False
        events.append(data)


def request(
    endpoint: Endpoint,
    method: str,
    suffix: str,
    *,
    body: dict[str, Any] | None,
    key: str | None,
    timeout_s: float,
    limit: int = RESPONSE_LIMIT,
    stream: bool = False,
) -> HttpReply:
    """One request within a total deadline of ``timeout_s``; the body is read up to ``limit``
    bytes (one more marks ``overflow``). With ``stream``, a ``text/event-stream`` reply is read
    as events; any other reply as a body."""
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if stream:
        headers["Accept"] = "text/event-stream, application/json"
    data = None
    if body is not None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers["Content-Type"] = "application/json"
    if key:
        headers["Authorization"] = f"Bearer {key}"
    connection = _deadline_connection(endpoint, timeout_s)
    try:
        connection.request(method, endpoint.path + suffix, body=data, headers=headers)
        response = connection.getresponse()
        kind = response.getheader("Content-Type", "") or ""
        if stream and response.status == 200 and kind.startswith("text/event-stream"):
            events, overflow = _read_events(response, limit)
            return HttpReply(response.status, b"", overflow, events)
        payload = response.read(limit + 1)
        return HttpReply(response.status, payload[:limit], len(payload) > limit)
    except (OSError, http.client.HTTPException) as exc:
        late = isinstance(exc, socket.timeout | TimeoutError)
        kind = "server-timeout" if late else "server-error"
        why = f"timed out after {timeout_s:.0f} s (connection closed)" if late else _describe(exc)
        raise HttpFailure(kind, f"{method} {endpoint.url(suffix)}: {why}") from None
    finally:
        # Closing is what tells a streaming server to stop generating.
        connection.close()


def unreachable(endpoint: Endpoint, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> str | None:
    """Why ``endpoint`` cannot be reached, or ``None`` when it answers HTTP.

    ``GET {base}/models`` with no key: any HTTP status (401 from a hosted provider included)
    shows the server is there; no completion is requested and no key is sent.
    """
    try:
        request(endpoint, "GET", "/models", body=None, key=None, timeout_s=timeout_s, limit=4096)
    except HttpFailure as failure:
        return failure.message
    return None
