"""Admission control of ``lorelab serve``: a bound on requests in flight, 503 beyond the queue,
and a SIGTERM under a backlog that refuses the queue and lets the request in flight finish."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.serve import Limits
from lorelab.serve._admission import Admission
from tests.support.serve import (
    PROTOCOL,
    http_client,
    make_token,
    mcp_call_body,
    mcp_post,
    running_server,
    start_server,
    stop,
    wait_for_state,
)

RECORD = {
    "task": "Fix the flaky export job admission-queue after the retry change",
    "summary": "Made the retry idempotent; the export test passes again.",
    "outcome": "passed",
    "verification": {"command": "pytest -q tests/test_export.py", "exit_code": 0},
    "commands": [{"command": "pytest -q tests/test_export.py", "exit_code": 0}],
}


def _head(url: str, token: str, tool: str, length: int) -> bytes:
    host = url.removeprefix("http://")
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: {host}",
        f"Authorization: Bearer {token}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"Mcp-Protocol-Version: {PROTOCOL}",
        "Mcp-Method: tools/call",
        f"Mcp-Name: {tool}",
        f"Content-Length: {length}",
        "Connection: close",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@dataclass
class Held:
    """A request in flight: its record waits for the store's write lock, which the test holds."""

    sock: socket.socket
    lock: sqlite3.Connection


@contextmanager
def held_slot(url: str, token: str, body: bytes, home: Path) -> Iterator[Held]:
    """A whole ``lore_record`` request that holds a slot until :func:`_finish` (the store's
    write lock is held meanwhile, so the call waits in the store: a body that has not
    arrived holds no slot)."""
    lock = sqlite3.connect(home / "memory.db", isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=120)
    try:
        sock.sendall(_head(url, token, "lore_record", len(body)) + body)
        yield Held(sock, lock)
    finally:
        sock.close()
        if lock.in_transaction:
            lock.rollback()
        lock.close()


def _finish(held: Held) -> tuple[int, bytes]:
    held.lock.rollback()
    chunks = []
    while chunk := held.sock.recv(65536):
        chunks.append(chunk)
    response = b"".join(chunks)
    status = int(response.split(b" ", 2)[1])
    return status, response.partition(b"\r\n\r\n")[2]


def _wait_for(server_url: str, *, in_flight: int, queued: int) -> dict[str, Any]:
    """``/healthz`` once the server has ``in_flight`` requests running and ``queued`` waiting
    (a bounded wait: the requests were sent from other threads or sockets)."""
    for _ in range(1200):
        health = dict(httpx2.get(f"{server_url}/healthz", timeout=60).json())
        if health["inFlight"] == in_flight and health["queued"] == queued:
            return health
        time.sleep(0.05)
    raise AssertionError(f"never {in_flight} in flight and {queued} queued: {health}")


def _leaves(group: BaseException) -> list[str]:
    if isinstance(group, BaseExceptionGroup):
        return [text for inner in group.exceptions for text in _leaves(inner)]
    return [f"{type(group).__name__}: {group}"]


def _tasks(home: Path) -> list[str]:
    conn = sqlite3.connect(f"{(home / 'memory.db').as_uri()}?mode=ro", uri=True)
    try:
        return [str(row[0]) for row in conn.execute("SELECT task FROM experiences")]
    finally:
        conn.close()


# One worker: each process admits on its own (lorelab.serve._workers), and these tests count one.
LIMITS = ["--workers", "1", "--max-in-flight", "1", "--max-queue", "0"]


def test_a_request_beyond_the_queue_gets_503_with_retry_after_and_nothing_is_stored(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    held_body = mcp_call_body(1, "lore_record", {**RECORD, "task": "the held record"})
    with running_server(home, project, args=LIMITS) as server:
        assert server.token is not None
        with held_slot(server.url, server.token, held_body, home) as held:
            _wait_for(server.url, in_flight=1, queued=0)
            refused = mcp_post(server.url, server.token, mcp_call_body(2, "lore_record", RECORD))
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            error = refused.json()["error"]
            assert error["message"] == (
                "server busy: 1 in flight, 0 queued (--max-in-flight 1, --max-queue 0)"
            )

            # The SDK's own client is refused too, with the same message.
            async def sdk_record() -> None:
                async with http_client(server.mcp_url, server.token) as client:
                    await client.call_tool("lore_record", RECORD)

            with pytest.raises(BaseExceptionGroup) as caught:
                anyio.run(sdk_record)
            assert _leaves(caught.value) == [f"MCPError: {error['message']}"]
            status, _ = _finish(held)
            assert status == 200
        # The server serves again once the slot is free.
        assert mcp_post(
            server.url, server.token, mcp_call_body(3, "lore_list", {}), "lore_list"
        ).is_success
    assert _tasks(home) == ["the held record"]


def test_a_queued_request_runs_when_the_slot_frees(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    held_body = mcp_call_body(1, "lore_record", {**RECORD, "task": "the held record"})
    args = [*LIMITS[:4], "--max-queue", "1", "--queue-timeout-s", "600"]
    with running_server(home, project, args=args) as server:
        assert server.token is not None
        token = server.token
        with (
            held_slot(server.url, token, held_body, home) as held,
            concurrent.futures.ThreadPoolExecutor(1) as pool,
        ):
            queued = pool.submit(
                mcp_post, server.url, token, mcp_call_body(2, "lore_record", RECORD)
            )
            _wait_for(server.url, in_flight=1, queued=1)
            third = mcp_post(server.url, token, mcp_call_body(3, "lore_list", {}), "lore_list")
            assert third.status_code == 503  # the queue is full
            assert not queued.done()
            assert _finish(held)[0] == 200
            answered = queued.result(timeout=120)
        assert answered.status_code == 200
        assert "result" in answered.json()
    assert sorted(_tasks(home)) == sorted(["the held record", RECORD["task"]])


def test_sigterm_under_a_backlog_refuses_the_queue_and_the_request_in_flight_finishes(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    token = make_token(home, project, "bench", "write")
    args = [*LIMITS[:4], "--max-queue", "20", "--queue-timeout-s", "600"]
    process = start_server(home, project, args=args)
    state = wait_for_state(process, home)
    url = state["url"]
    held_body = mcp_call_body(1, "lore_record", {**RECORD, "task": "the record in flight"})
    bodies = [
        mcp_call_body(10 + n, "lore_record", {**RECORD, "task": f"queued {n}"}) for n in range(20)
    ]
    try:
        with (
            held_slot(url, token, held_body, home) as held,
            concurrent.futures.ThreadPoolExecutor(20) as pool,
        ):
            queued = [pool.submit(mcp_post, url, token, body) for body in bodies]
            _wait_for(url, in_flight=1, queued=20)
            process.send_signal(signal.SIGTERM)
            answers = [future.result(timeout=120) for future in queued]
            status, content = _finish(held)
        code = process.wait(timeout=120)  # generous: bounded, not a speed claim
    finally:
        stop(process)
    assert {answer.status_code for answer in answers} == {503}
    assert {answer.json()["error"]["message"] for answer in answers} == {"server shutting down"}
    assert status == 200
    acked = json.loads(content)["result"]["structuredContent"]["id"]
    assert acked.startswith("exp-")
    assert code == 143
    assert _tasks(home) == ["the record in flight"]


def test_the_limits_are_checked_before_anything_starts(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    result = CliRunner().invoke(
        app,
        [
            "serve",
            "start",
            "--home",
            str(tmp_path / "h"),
            "--project",
            str(project),
            "--max-queue",
            "-1",
        ],
    )
    assert result.exit_code == 2
    assert "--max-queue" in result.stderr
    assert "-1 is not in the range x>=0" in result.stderr
    assert not (tmp_path / "h").exists()


class Gate:
    """An ASGI app that answers 200 once its gate opens: a request held in flight."""

    def __init__(self) -> None:
        self.open = anyio.Event()
        self.entered = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.entered += 1
        await self.open.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _scope() -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": []}


async def _request(app: Any, statuses: list[int], bodies: list[bytes]) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])
        else:
            bodies.append(message["body"])

    await app(_scope(), receive, send)


def test_a_request_that_waits_longer_than_the_queue_timeout_is_refused():
    gate = Gate()
    admission = Admission(Limits(in_flight=1, queued=4, queue_seconds=0.2))
    app = admission.admitting(gate)
    statuses: list[int] = []
    bodies: list[bytes] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_request, app, statuses, bodies)  # holds the slot
            await anyio.wait_all_tasks_blocked()
            await _request(app, statuses, bodies)  # waits, then is refused
            gate.open.set()

    anyio.run(main)
    assert statuses == [503, 200]
    assert json.loads(bodies[0])["error"]["message"] == (
        "server busy: no slot within 0.2 s (--queue-timeout-s)"
    )
    assert gate.entered == 1
    assert (admission.running, len(admission.waiting), admission.refused) == (0, 0, 1)


def test_a_waiting_request_whose_client_is_gone_gives_its_place_back():
    gate = Gate()
    admission = Admission(Limits(in_flight=1, queued=1, queue_seconds=600))
    app = admission.admitting(gate)
    statuses: list[int] = []
    bodies: list[bytes] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_request, app, statuses, bodies)
            await anyio.wait_all_tasks_blocked()
            gone = anyio.CancelScope()
            group.start_soon(_waiting_until_cancelled, app, gone)
            await anyio.wait_all_tasks_blocked()
            assert len(admission.waiting) == 1
            gone.cancel()
            await anyio.wait_all_tasks_blocked()
            assert len(admission.waiting) == 0
            # The queue has room again: the next request waits rather than being refused.
            group.start_soon(_request, app, statuses, bodies)
            await anyio.wait_all_tasks_blocked()
            assert len(admission.waiting) == 1
            gate.open.set()

    anyio.run(main)
    assert statuses == [200, 200]
    assert gate.entered == 2
    assert (admission.running, len(admission.waiting), admission.refused) == (0, 0, 0)


async def _waiting_until_cancelled(app: Any, scope: anyio.CancelScope) -> None:
    with scope:
        await _request(app, [], [])
