"""The HTTP application of ``lorelab serve``: MCP at ``/mcp``, hooks at ``/hooks``, ``/healthz``.

Built from the official SDK's parts: its streamable HTTP session manager serves the same
low-level server as ``lorelab mcp`` (the operations table), behind its bearer-token middleware
(``BearerAuthBackend`` and ``RequireAuthMiddleware``: 401 without a live token). A request to
``/mcp`` or ``/hooks`` then passes, in order: the token check, the body read whole within its
limits (``_guard``), admission (``_admission``) and, for MCP, one gate of ours: a
``tools/call`` of a tool the token's scope does not cover is answered 403, with a JSON-RPC
error, before the SDK reads it, so nothing runs and nothing is stored. On a loopback address
every request first passes the Host and Origin check. Every tool call and hook runs with the
token's name as ``recorded_by``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp_types import CallToolRequestParams, CallToolResult, TextContent
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lorelab import __version__
from lorelab.mcp._server import LorelabServer
from lorelab.memory import briefs_unrecorded, recording_as
from lorelab.serve._admission import Admission, Limits
from lorelab.serve._guard import MAX_BODY, BodyGuard, LoopbackHosts
from lorelab.serve._tokens import SCOPES, TokenBook
from lorelab.serve._tokens import Scope as TokenScope

LOG: Final = logging.getLogger("lorelab.serve")
FORBIDDEN: Final = -32003
"""The JSON-RPC error code of a call the token's scope does not cover."""
UNRECORDED_FOR_READERS: Final = frozenset({"lore_prepare"})
"""Tools a read token may call although they store something: what they store for it is only
an audit record (prepare's record of the brief it served), which is not kept for a read token:
its brief comes back with ``brief_id`` null, as from a read-only store."""


class ServedLorelab(LorelabServer):
    """The stdio server's tools, each call run as the token that sent it."""

    async def _call_tool(self, ctx: object, params: CallToolRequestParams) -> CallToolResult:
        entry = self.operations.get(params.name)
        if entry is None:
            return await super()._call_tool(ctx, params)
        request = getattr(ctx, "request", None)
        name = caller_name(request)
        scopes = caller_scopes(request)
        needed = self.needed_scope(params.name)
        if scopes is not None and needed not in scopes:
            # ScopeGate answered 403 before; this holds should a message ever get past it.
            text = f"forbidden: token {name!r} has scope {scopes[-1]}; {params.name} needs {needed}"
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        unrecorded = scopes is not None and "write" not in scopes
        return await anyio.to_thread.run_sync(
            functools.partial(self._call_as, name, unrecorded, entry, params.arguments or {})
        )

    def _call_as(
        self, name: str | None, unrecorded: bool, entry: Any, arguments: dict[str, Any]
    ) -> CallToolResult:
        with recording_as(name), contextlib.ExitStack() as stack:
            if unrecorded:
                stack.enter_context(briefs_unrecorded())
            return self.call(entry, arguments)

    def needed_scope(self, tool: str) -> TokenScope:
        """The scope a call of ``tool`` needs: admin for what needs the operator's consent."""
        entry = self.operations.get(tool)
        if entry is None or entry.read_only or tool in UNRECORDED_FOR_READERS:
            return "read"
        return "admin" if entry.needs_consent else "write"


def _user(request: object) -> AuthenticatedUser | None:
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    return user if isinstance(user, AuthenticatedUser) else None


def caller_name(request: object) -> str | None:
    """The name of the token an HTTP request was authenticated with (``None``: no auth)."""
    user = _user(request)
    return None if user is None else user.access_token.client_id


def caller_scopes(request: object) -> list[str] | None:
    """The scopes of the token an HTTP request was authenticated with (``None``: no auth)."""
    user = _user(request)
    return None if user is None else user.access_token.scopes


class BookVerifier:
    """The SDK's ``TokenVerifier`` over our token book."""

    def __init__(self, book: TokenBook) -> None:
        self.book = book

    async def verify_token(self, token: str) -> AccessToken | None:
        grant = self.book.grant(token)
        if grant is None:
            return None
        scopes: list[str] = list(SCOPES[: SCOPES.index(grant.scope) + 1])
        return AccessToken(token=token, client_id=grant.name, scopes=scopes)


def _forbidden(ident: Any, message: str) -> Response:
    body = {"jsonrpc": "2.0", "id": ident, "error": {"code": FORBIDDEN, "message": message}}
    return JSONResponse(body, status_code=403)


def _calls(body: bytes) -> list[tuple[Any, str]]:
    """The ``(id, tool)`` of every ``tools/call`` in a JSON-RPC message or batch."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return []  # the SDK answers a malformed body itself
    messages = parsed if isinstance(parsed, list) else [parsed]
    found = []
    for message in messages:
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            continue
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("name"), str):
            found.append((message.get("id"), params["name"]))
    return found


class ScopeGate:
    """403 for a tool call the token's scope does not cover; every other request passes on."""

    def __init__(self, app: ASGIApp, server: ServedLorelab) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body") or size > MAX_BODY:
                break
        if isinstance(user, AuthenticatedUser) and size <= MAX_BODY:
            body = b"".join(m.get("body", b"") for m in messages)
            granted = user.access_token.scopes
            for ident, tool in _calls(body):
                needed = self.server.needed_scope(tool)
                if needed not in granted:
                    LOG.warning("token %s (%s) refused %s", user.username, granted[-1], tool)
                    response = _forbidden(
                        ident,
                        f"forbidden: token {user.username!r} has scope {granted[-1]}; "
                        f"{tool} needs {needed}",
                    )
                    await response(scope, receive, send)
                    return
        replay = iter(messages)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)


HookRunner = Callable[..., str]
MAX_FACT_CHARS: Final = 64 * 1024
"""The longest transcript text a hook may send (``lorelab.hooks._answer.TRANSCRIPT_TEXT_LIMIT``)."""


def _facts(head: bytes) -> tuple[str | None, str | None] | None:
    """``(project, last assistant text)`` from a hook body's first line; ``None`` if malformed."""
    try:
        facts = json.loads(head)
    except (ValueError, RecursionError):
        return None
    if not isinstance(facts, dict) or set(facts) - {"project", "lastAssistantText"}:
        return None
    project, text = facts.get("project"), facts.get("lastAssistantText")
    if project is not None and not (isinstance(project, str) and project.startswith("/")):
        return None
    if text is not None and not (isinstance(text, str) and len(text) <= MAX_FACT_CHARS):
        return None
    return project, text


class HookApp:
    """``POST /hooks/AGENT/EVENT``: the hook's handler, run on the server's store.

    A class, not a function: a route hands an ASGI app scope, receive and send, while it would
    call a function with a request alone."""

    def __init__(self, home: Path, run_hook: HookRunner) -> None:
        self.home = home
        self.run_hook = run_hook

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.respond(Request(scope, receive))
        await response(scope, receive, send)

    async def respond(self, request: Request) -> Response:
        from lorelab.hooks._answer import Served

        body = await request.body()
        head, _, raw = body.partition(b"\n")
        facts = _facts(head)
        if facts is None:
            return JSONResponse(
                {
                    "error": 'the first line must be {"project": absolute path or null, '
                    '"lastAssistantText": string or null}'
                },
                400,
            )
        project, last_reply = facts
        agent, event = request.path_params["agent"], request.path_params["event"]
        # The server's own store, whatever the hook's environment named; no client value is
        # taken from an environment, and no path the payload names is opened (``served``).
        environ = {"LORELAB_HOME": str(self.home)}
        if project is not None:
            environ["CLAUDE_PROJECT_DIR"] = project
        name = caller_name(request)

        def handle() -> str:
            with recording_as(name):
                return self.run_hook(agent, event, raw, environ, served=Served(last_reply))

        out = await anyio.to_thread.run_sync(handle)
        return PlainTextResponse(out)


def _proof_endpoint(proof_key: bytes) -> Callable[[Request], Awaitable[Response]]:
    """``GET /proof``: HMAC-SHA256(proof key, nonce), so a hook knows it reached this user's
    server before it sends anything (``lorelab.serve._fast``)."""
    from lorelab.serve._fast import proof

    async def endpoint(request: Request) -> Response:
        nonce = request.headers.get("x-lorelab-nonce", "")
        try:
            raw = bytes.fromhex(nonce)
        except ValueError:
            raw = b""
        if len(raw) != 32:
            return JSONResponse({"error": "X-Lorelab-Nonce: 32 bytes in hex expected"}, 400)
        return JSONResponse({"proof": proof(proof_key, raw)})

    return endpoint


def _healthz(admission: Admission) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        body = {
            "status": "ok",
            "server": "lorelab",
            "version": __version__,
            "inFlight": admission.running,
            "queued": len(admission.waiting),
            "refused": admission.refused,
        }
        return JSONResponse(body)

    return endpoint


def build_app(
    server: ServedLorelab,
    *,
    home: Path,
    book: TokenBook | None,
    loopback_names: tuple[str, ...] | None,
    run_hook: HookRunner,
    limits: Limits,
    proof_key: bytes,
) -> tuple[ASGIApp, Admission]:
    """The ASGI application and its admission: tokens checked when ``book`` is given
    (``None``: ``--no-auth``); with ``loopback_names`` (a loopback server), every request's
    Host and Origin must be this machine: a loopback address, ``localhost`` or one of them."""
    manager = StreamableHTTPSessionManager(
        app=server.lowlevel,
        # The Host and Origin check is ours (LoopbackHosts), over every path and address.
        security_settings=None,
        max_request_body_size=MAX_BODY,
        # One JSON answer per request: no tool streams progress, and SSE costs each call more.
        json_response=True,
    )
    admission = Admission(limits)

    def admitted(app: ASGIApp, scope: str) -> ASGIApp:
        guarded: ASGIApp = BodyGuard(admission.admitting(app), limits.body_seconds)
        # Without a token no body is read: the 401 comes first.
        return guarded if book is None else RequireAuthMiddleware(guarded, [scope])

    routes = [
        Route("/mcp", endpoint=admitted(ScopeGate(StreamableHTTPASGIApp(manager), server), "read")),
        Route("/healthz", endpoint=_healthz(admission), methods=["GET"]),
        Route("/proof", endpoint=_proof_endpoint(proof_key), methods=["GET"]),
        # A hook may record (the Stop hook): it needs a write token, else the SDK's 403.
        Route(
            "/hooks/{agent}/{event}",
            endpoint=admitted(HookApp(home, run_hook), "write"),
            methods=["POST"],
        ),
    ]
    middleware: list[Middleware] = []
    if loopback_names is not None:
        middleware.append(Middleware(LoopbackHosts, names=loopback_names))
    if book is not None:
        middleware += [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(BookVerifier(book))),
            Middleware(AuthContextMiddleware),
        ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan), admission
