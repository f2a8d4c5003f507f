"""What a request to ``lorelab serve`` passes before it can hold a slot or reach a tool.

:class:`LoopbackHosts`: on a server bound to a loopback address (any 127/8 address, ``::1``
in any spelling), a ``Host`` or ``Origin`` header that names anything but ``localhost``, a
loopback address or the name the server was started with is refused (421, 403): a page
whose name an attacker re-points at 127.0.0.1 (DNS rebinding) reaches nothing.

:class:`BodyGuard`: a ``POST`` body is read whole before admission gives the request a slot,
at most ``MAX_BODY`` bytes (413) within ``body_seconds`` (408). So a client that never sends
its body holds no slot, only its own connection, until its deadline. The bytes of unfinished
bodies one client holds at once (by token name; without auth, by address) are bounded too.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Final

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOG: Final = logging.getLogger("lorelab.serve")
MAX_BODY: Final = 4 * 1024 * 1024
"""The largest request body read (the SDK's own limit for MCP requests)."""
CLIENT_UNFINISHED_BYTES: Final = 4 * MAX_BODY
"""The bytes of bodies still arriving that one client may hold in the server at once."""


async def _plain(send: Send, status: int, text: str) -> None:
    """A short plain-text answer that closes the connection (its request may be unread)."""
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class LoopbackHosts:
    """421 for a ``Host``, 403 for an ``Origin``, that is not this machine by address or name."""

    def __init__(self, app: ASGIApp, names: Iterable[str] = ()) -> None:
        self.app = app
        self.names = frozenset(name.lower() for name in (*names, "localhost"))

    def host_allowed(self, host: str) -> bool:
        """Whether ``host`` (``name``, ``name:port``, ``[v6]`` or ``[v6]:port``) is local."""
        if host.startswith("["):
            name, closed, port = host[1:].partition("]")
            if not closed or (port and not port.startswith(":")):
                return False
            port = port[1:]
        elif ":" in host:
            name, _, port = host.rpartition(":")
            if ":" in name:  # an IPv6 address outside brackets is no Host
                return False
        else:
            name, port = host, ""
        if port and not port.isdigit():
            return False
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return name.lower() in self.names

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether ``origin`` is absent (not a browser) or an http(s) origin on this machine."""
        if origin is None:
            return True
        scheme, sep, host = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and self.host_allowed(host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        if host is None or not self.host_allowed(host):
            LOG.warning("refused a request for host %r (not this machine)", host)
            await _plain(send, 421, "Invalid Host header")
            return
        if not self.origin_allowed(headers.get("origin")):
            LOG.warning("refused a request from origin %r", headers.get("origin"))
            await _plain(send, 403, "Invalid Origin header")
            return
        await self.app(scope, receive, send)


def _client(scope: Scope) -> str:
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return f"token {user.access_token.client_id}"
    client = scope.get("client")
    return f"address {client[0]}" if client else "address unknown"


class BodyGuard:
    """Reads a ``POST`` body whole (bounded in size and time) and hands it on in one message."""

    def __init__(self, app: ASGIApp, body_seconds: float) -> None:
        self.app = app
        self.body_seconds = body_seconds
        self.unfinished: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
            await _plain(send, 413, f"request body over {MAX_BODY} bytes")
            return
        client = _client(scope)
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.move_on_after(self.body_seconds) as deadline:
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client is gone: nothing to answer
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    self.unfinished[client] = self.unfinished.get(client, 0) + len(chunk)
                    if size > MAX_BODY:
                        await _plain(send, 413, f"request body over {MAX_BODY} bytes")
                        return
                    if self.unfinished[client] > CLIENT_UNFINISHED_BYTES:
                        LOG.warning("%s: too many body bytes still arriving; refused", client)
                        await _plain(send, 503, f"{client}: too many request bodies unfinished")
                        return
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        finally:
            left = self.unfinished.get(client, 0) - size
            if left > 0:
                self.unfinished[client] = left
            else:
                self.unfinished.pop(client, None)
        if deadline.cancelled_caught:
            LOG.warning("%s: request body not received within %g s", client, self.body_seconds)
            await _plain(send, 408, f"request body not received within {self.body_seconds:g} s")
            return
        whole: list[Message] = [{"type": "http.request", "body": b"".join(chunks)}]

        async def replayed() -> Message:
            return whole.pop() if whole else await receive()

        await self.app(scope, replayed, send)
