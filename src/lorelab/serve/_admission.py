"""Admission control for ``lorelab serve``: a bound on requests in flight, a bounded queue.

The store runs one call at a time (one connection behind one lock), so more requests in
flight than a few only wait inside the server, each holding a thread and a connection, and a
backlog grows without bound under overload. :class:`Admission` lets at most ``in_flight``
requests (``POST /mcp`` and ``POST /hooks/...``) run at once. The next ``queued`` wait, first
come first served, each for at most ``queue_seconds``. Any other is refused at once with
``503 Service Unavailable`` and ``Retry-After``: nothing of it runs, so nothing of it is
stored. ``GET /healthz`` and the other methods pass without a slot. A request is admitted
only once its token was checked and its body was read whole (``_guard.BodyGuard``): a client
that never sends its body holds no slot.

At shutdown (:meth:`Admission.close`) every waiting request and every new one is refused the
same way, while those in flight finish: a SIGTERM under a backlog exits as soon as the few in
flight are answered, and every answered record was committed before its answer.
"""

from __future__ import annotations

import collections
import json
import logging
from dataclasses import dataclass
from typing import Final

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

LOG: Final = logging.getLogger("lorelab.serve")
BUSY: Final = -32000
"""The JSON-RPC error code of a request refused for load (the server's own error range)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """How many requests run at once, how many may wait, for how long, and how long a
    request's body may take to arrive."""

    in_flight: int = 4
    queued: int = 64
    queue_seconds: float = 10.0
    retry_after_seconds: int = 1
    body_seconds: float = 10.0


class _Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False


class Admission:
    """At most ``limits.in_flight`` POST requests at once, over every app it admits to."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.running = 0
        self.waiting: collections.deque[_Waiter] = collections.deque()
        self.closing = False
        self.refused = 0

    def admitting(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind this admission: its POST requests share the slots and the queue."""
        return _Admitted(self, app)

    async def run(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Run ``app`` for one request once it has a slot, or refuse it with 503."""
        refusal = await self._admit()
        if refusal is not None:
            self.refused += 1
            await _refuse(send, refusal, self.limits.retry_after_seconds)
            return
        try:
            await app(scope, receive, send)
        finally:
            self._release()

    async def _admit(self) -> str | None:
        """Take a slot (``None``), or the reason this request is refused."""
        if self.closing:
            return "server shutting down"
        if self.running < self.limits.in_flight and not self.waiting:
            self.running += 1
            return None
        if len(self.waiting) >= self.limits.queued:
            return (
                f"server busy: {self.running} in flight, {len(self.waiting)} queued "
                f"(--max-in-flight {self.limits.in_flight}, --max-queue {self.limits.queued})"
            )
        waiter = _Waiter()
        self.waiting.append(waiter)
        try:
            with anyio.move_on_after(self.limits.queue_seconds):
                await waiter.event.wait()
        except BaseException:  # cancelled while waiting: give back a slot handed over meanwhile
            self._withdraw(waiter)
            raise
        if waiter.granted:
            return None  # the slot was handed over by _release, whatever woke us
        self._withdraw(waiter)
        if self.closing:
            return "server shutting down"
        return f"server busy: no slot within {self.limits.queue_seconds:g} s (--queue-timeout-s)"

    def _withdraw(self, waiter: _Waiter) -> None:
        if waiter.granted:
            self._release()
        elif waiter in self.waiting:
            self.waiting.remove(waiter)

    def _release(self) -> None:
        """Hand the slot to the first waiter, or give it back."""
        if self.waiting and not self.closing:
            waiter = self.waiting.popleft()
            waiter.granted = True
            waiter.event.set()
            return
        self.running -= 1

    def close(self) -> None:
        """Refuse every waiting request and every new one; those in flight finish."""
        self.closing = True
        while self.waiting:
            self.waiting.popleft().event.set()
        LOG.info("shutting down: %d requests in flight finish", self.running)


class _Admitted:
    """An ASGI app (a class, so that a route passes it scope, receive and send) whose POST
    requests go through an :class:`Admission`."""

    def __init__(self, admission: Admission, app: ASGIApp) -> None:
        self.admission = admission
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        await self.admission.run(self.app, scope, receive, send)


async def _refuse(send: Send, reason: str, retry_after: int) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": BUSY, "message": reason}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(retry_after).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
