"""One bounded HTTP exchange with an OpenAI-compatible server, and the preflight connection.

Standard library only (``http.client``): one connection per request, a socket timeout from the
call's budget, the body read at most one byte past its bound. The API key goes only into the
``Authorization`` header of a completion request; the preflight sends no key and asks for no
completion.
"""

from __future__ import annotations

import http.client
import json
import socket
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
    """What the server answered: the status, and the body (``overflow``: past the bound)."""

    status: int
    body: bytes
    overflow: bool


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


def request(
    endpoint: Endpoint,
    method: str,
    suffix: str,
    *,
    body: dict[str, Any] | None,
    key: str | None,
    timeout_s: float,
    limit: int = RESPONSE_LIMIT,
) -> HttpReply:
    """One request; the body is read up to ``limit`` bytes (one more marks ``overflow``)."""
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers["Content-Type"] = "application/json"
    if key:
        headers["Authorization"] = f"Bearer {key}"
    connection = _connection(endpoint, timeout_s)
    try:
        connection.request(method, endpoint.path + suffix, body=data, headers=headers)
        response = connection.getresponse()
        payload = response.read(limit + 1)
        return HttpReply(response.status, payload[:limit], len(payload) > limit)
    except (OSError, http.client.HTTPException) as exc:
        kind = (
            "server-timeout" if isinstance(exc, socket.timeout | TimeoutError) else "server-error"
        )
        raise HttpFailure(kind, f"{method} {endpoint.url(suffix)}: {_describe(exc)}") from None
    finally:
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
