"""The guards in front of the server's endpoints, in-process: which Host is this machine, and
how many body bytes still arriving one client may hold."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from lorelab.serve._guard import CLIENT_UNFINISHED_BYTES, MAX_BODY, BodyGuard, LoopbackHosts
from lorelab.serve._run import is_loopback, listen_address


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8765",
        "127.0.0.2:8765",
        "localhost:8765",
        "LOCALHOST",
        "[::1]:8765",
        "[0:0:0:0:0:0:0:1]:8765",
        "[::0001]",
        "devbox:8765",
    ],
)
def test_a_host_on_this_machine_passes(host):
    assert LoopbackHosts(None, ["devbox"]).host_allowed(host)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:8765",
        "127.0.0.1.evil.example:8765",
        "localhost.:8765",
        "10.0.0.1:8765",
        "::1:8765",
        "[::1",
        "[::1]x",
        "127.0.0.1:80x",
        "",
    ],
)
def test_a_host_elsewhere_or_malformed_is_refused(host):
    assert not LoopbackHosts(None, ["devbox"]).host_allowed(host)  # type: ignore[arg-type]


def test_an_origin_passes_only_over_http_from_this_machine():
    hosts = LoopbackHosts(None)  # type: ignore[arg-type]
    assert hosts.origin_allowed(None)
    assert hosts.origin_allowed("http://127.0.0.1:3000")
    assert hosts.origin_allowed("https://localhost")
    assert not hosts.origin_allowed("null")
    assert not hosts.origin_allowed("http://evil.example")
    assert not hosts.origin_allowed("file://localhost")


@pytest.mark.parametrize(
    ("given", "bound"),
    [
        ("[::1]", "::1"),
        ("::0001", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("127.1", "127.0.0.1"),
        ("127.000.000.001", "127.0.0.1"),
        ("localhost", "localhost"),
        ("0.0.0.0", "0.0.0.0"),
    ],
)
def test_every_spelling_of_an_address_binds_its_canonical_form(given, bound):
    assert listen_address(given) == bound
    assert is_loopback(given) == (given != "0.0.0.0")


class Sink:
    """An ASGI app that records the bodies it was handed."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.bodies.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _scope(client: str) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "client": (client, 1)}


async def _post(guard: BodyGuard, client: str, chunk: bytes, statuses: list[int]) -> None:
    """A request that sends ``chunk`` and then nothing more (until cancelled), unless
    ``chunk`` is its whole body (empty: a finished one-byte body)."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": chunk or b"x", "more_body": bool(chunk)}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await guard(_scope(client), receive, send)


def test_one_client_s_unfinished_bodies_are_bounded_and_others_go_on():
    sink = Sink()
    guard = BodyGuard(sink, 600)
    refused: list[int] = []
    other: list[int] = []
    holding = CLIENT_UNFINISHED_BYTES // MAX_BODY

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(holding):  # each holds a whole 4 MiB of a body that never ends
                group.start_soon(_post, guard, "10.0.0.1", b"x" * MAX_BODY, [])
            await anyio.wait_all_tasks_blocked()
            assert guard.unfinished == {"address 10.0.0.1": CLIENT_UNFINISHED_BYTES}
            await _post(guard, "10.0.0.1", b"y", refused)  # one byte more: refused
            await _post(guard, "10.0.0.2", b"", other)  # another client is served
            group.cancel_scope.cancel()

    anyio.run(main)
    assert refused == [503]
    assert other == [200]
    assert sink.bodies == [b"x"]
    assert guard.unfinished == {}
