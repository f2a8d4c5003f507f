"""The supervisor hands each connection to the process with the fewest open ones
(``lorelab.serve._dispatch``): the pieces on real socket pairs, then a real server."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import secrets
import signal
import socket
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest

from lorelab.serve._dispatch import CLOSED, CONNECTION, Dispatcher, Receiver, channel_pair
from tests.serve.test_workers import _owner, _server_with_workers
from tests.support.processes import children, gone_soon
from tests.support.serve import mcp_call_body, mcp_post, stop, wait_for_state


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _listener() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def _connect(listener: socket.socket) -> tuple[socket.socket, socket.socket]:
    """A client connection to ``listener`` and the server's end of it."""
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    return client, server


def _take(channel: socket.socket) -> socket.socket:
    """What a worker gets on ``channel``: the one connection handed to it."""
    message, fds, _, _ = socket.recv_fds(channel, 16, 4)
    assert message == CONNECTION
    assert len(fds) == 1
    return socket.socket(fileno=fds[0])


def test_connections_go_to_the_process_with_fewest_open_and_ties_in_turn(loop):
    listener = _listener()
    pairs = [channel_pair() for _ in range(2)]
    dispatcher = Dispatcher(listener, [ours for ours, _ in pairs])
    here: list[socket.socket] = []
    dispatcher.start(loop, here.append)
    clients = []
    try:
        chosen = []
        for _ in range(6):
            client, conn = _connect(listener)
            clients.append(client)
            chosen.append(dispatcher.hand(conn))
        assert Counter(chosen) == {0: 2, 1: 2, 2: 2}
        assert dispatcher.open == [2, 2, 2]
        # Worker 1 reports two connections closed (in one message): the next two are its.
        pairs[0][1].send(CLOSED * 2)
        dispatcher._reported(1)
        assert dispatcher.open == [2, 0, 2]
        for _ in range(2):
            client, conn = _connect(listener)
            clients.append(client)
            assert dispatcher.hand(conn) == 1
        # The descriptor a worker receives is the server's end of a client's connection.
        for _ in range(4):
            _take(pairs[0][1]).close()
        served = _take(pairs[1][1])
        assert served.getpeername() in [c.getsockname() for c in clients]
        served.close()
    finally:
        for sock in [listener, *clients, *here, *[s for pair in pairs for s in pair]]:
            sock.close()


def test_a_dead_worker_is_passed_by_and_a_full_channel_gives_its_turn_away(loop):
    listener = _listener()
    (dead_ours, dead_theirs), (full_ours, full_theirs) = channel_pair(), channel_pair()
    dispatcher = Dispatcher(listener, [dead_ours, full_ours])
    here: list[socket.socket] = []
    dispatcher.start(loop, here.append)
    dead_theirs.close()  # the worker died: its end is gone
    full_ours.setblocking(False)
    with contextlib.suppress(BlockingIOError):  # fill worker 2's channel to the brim
        while True:
            full_ours.send(b"x" * 1024)
    clients = []
    try:
        for _ in range(3):
            client, conn = _connect(listener)
            clients.append(client)
            assert dispatcher.hand(conn) == 0  # neither worker can take it: served here
        assert dispatcher.alive == [True, False, True]
        assert dispatcher.open == [3, 0, 0]
        assert len(here) == 3
    finally:
        for sock in [listener, *clients, *here, dead_ours, full_ours, full_theirs]:
            sock.close()


def test_a_worker_serves_only_stream_connections_sent_as_connections(loop):
    ours, theirs = channel_pair()
    receiver = Receiver(theirs)
    served: list[socket.socket] = []
    receiver.start(loop, served.append)
    read, write = os.pipe()
    datagram = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stream_a, stream_b = socket.socketpair()
    try:
        socket.send_fds(ours, [CONNECTION], [read])  # not a socket at all
        socket.send_fds(ours, [CONNECTION], [datagram.fileno()])  # not a stream
        socket.send_fds(ours, [b"?"], [stream_a.fileno()])  # not the message that hands one
        socket.send_fds(ours, [CONNECTION], [stream_b.fileno()])
        receiver._receive()
        assert len(served) == 1
        assert served[0].type == socket.SOCK_STREAM
        receiver.closed_here()
        assert ours.recv(16) == CLOSED
    finally:
        for sock in [ours, theirs, datagram, stream_a, stream_b, *served]:
            sock.close()
        os.close(write)
        with contextlib.suppress(OSError):
            os.close(read)


def _open(url: str, count: int) -> list[http.client.HTTPConnection]:
    """``count`` keep-alive connections, each answered once (``GET /proof``) and left open."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    connections = []
    for _ in range(count):
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        connection.connect()
        connections.append(connection)
    for connection in connections:
        connection.request("GET", "/proof", headers={"X-Lorelab-Nonce": secrets.token_hex(32)})
        response = connection.getresponse()
        assert response.status == 200
        response.read()
    return connections


def _owners(url: str, connections: list[http.client.HTTPConnection], pids: list[int]) -> list[int]:
    port = urlsplit(url).port
    assert port is not None
    found = []
    for connection in connections:
        assert connection.sock is not None
        owner = _owner(pids, connection.sock.getsockname()[1], port)
        assert owner is not None
        found.append(owner)
    return found


def test_a_burst_of_connections_is_spread_evenly_and_a_freed_process_takes_the_next(tmp_path):
    home, _, _, process = _server_with_workers(tmp_path, 3)
    connections: list[http.client.HTTPConnection] = []
    try:
        state = wait_for_state(process, home)
        pids = [process.pid, *children(process.pid)]
        assert len(pids) == 3
        connections = _open(state["url"], 9)  # all nine connect before any is answered
        owners = _owners(state["url"], connections, pids)
        assert sorted(Counter(owners).values()) == [3, 3, 3]
        # One process's three leave; once it has closed them (and told the supervisor), the
        # next three connections are all that process's.
        freed = owners[0]
        port = urlsplit(state["url"]).port
        left = [c for c, owner in zip(connections, owners, strict=True) if owner == freed]
        ports = [c.sock.getsockname()[1] for c in left if c.sock is not None]
        for connection in left:
            connection.close()
        deadline = time.monotonic() + 120
        while any(_owner(pids, p, port) is not None for p in ports):
            assert time.monotonic() < deadline, "the server never closed its ends"
            time.sleep(0.05)
        time.sleep(0.5)  # the close reports cross the channel
        later = _open(state["url"], 3)
        connections += later
        assert _owners(state["url"], later, pids) == [freed] * 3
    finally:
        for connection in connections:
            connection.close()
        stop(process)


def test_a_killed_worker_is_passed_by_and_every_new_connection_is_answered(tmp_path):
    home, _, token, process = _server_with_workers(tmp_path, 2)
    try:
        state = wait_for_state(process, home)
        (worker,) = children(process.pid)
        os.kill(worker, signal.SIGKILL)
        assert gone_soon(worker, 120)
        body = mcp_call_body(1, "lore_list", {})
        for _ in range(6):  # each on a new connection: the supervisor serves them all
            assert mcp_post(state["url"], token, body, "lore_list").status_code == 200
    finally:
        assert stop(process) == 143
