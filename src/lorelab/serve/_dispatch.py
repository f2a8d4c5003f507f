"""Spreading connections over the server's processes: each goes to the one with the fewest.

When several processes accept on one listening socket, the kernel wakes every idle one and the
first to run takes *all* the connections waiting (asyncio accepts up to a backlog's worth per
wake-up). Nine connections opened at once on three processes landed 9-0-0, and a connection
stays with its process for life: one process then serves them all on one core while the others
idle.

So with more than one process the supervisor alone accepts. It hands each new connection (its
file descriptor, over a ``SOCK_SEQPACKET`` socket pair only the two processes hold) to the
process with the fewest open connections, itself included (ties in turn), and each process
reports every connection it closes. A worker that died is passed by; a worker whose channel is
full is passed by for that connection. A process serves a connection it was handed exactly as
one it accepted (TLS, admission, the same app); the listening socket never reaches a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from collections.abc import Callable
from typing import Final

LOG: Final = logging.getLogger("lorelab.serve")
CONNECTION: Final = b"c"
"""Supervisor to worker: one message per connection, its descriptor attached."""
CLOSED: Final = b"-"
"""Worker to supervisor: one byte per connection the worker has closed."""
ACCEPT_BATCH: Final = 64
"""Connections accepted per wake-up of the listening socket before the loop runs others."""

ProtocolFactory = Callable[[], asyncio.BaseProtocol]


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair for one worker: (the supervisor's end, the worker's end)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.set_inheritable(False)
    theirs.set_inheritable(True)
    return ours, theirs


class Adopter:
    """Serves handed-over connections in this process with uvicorn's protocol; ``on_close``
    once per connection that ends (a failed TLS handshake included)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        factory: ProtocolFactory,
        tls: ssl.SSLContext | None,
        on_close: Callable[[], None],
    ) -> None:
        self.loop = loop
        self.factory = factory
        self.tls = tls
        self.on_close = on_close
        self.tasks: set[asyncio.Task[None]] = set()

    def __call__(self, conn: socket.socket) -> None:
        task = self.loop.create_task(self._adopt(conn))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _adopt(self, conn: socket.socket) -> None:
        ended = False

        def end() -> None:
            nonlocal ended
            if not ended:
                ended = True
                self.on_close()

        def make() -> asyncio.BaseProtocol:
            protocol = self.factory()
            lost = protocol.connection_lost

            def connection_lost(exc: Exception | None) -> None:
                try:
                    lost(exc)
                finally:
                    end()

            protocol.connection_lost = connection_lost  # type: ignore[method-assign]
            return protocol

        try:
            await self.loop.connect_accepted_socket(make, conn, ssl=self.tls)
        except (OSError, ssl.SSLError, asyncio.CancelledError, ValueError, RuntimeError) as exc:
            # A client that left, failed its TLS handshake, or came as the loop stopped:
            # nothing was served.
            LOG.debug("a connection ended before it was served: %r", exc)
            conn.close()
            end()


class Dispatcher:
    """The supervisor's side: accepts on ``listener`` and hands each connection to the process
    with the fewest open ones (index 0 is this process; 1.. the workers, by ``channels``)."""

    def __init__(self, listener: socket.socket, channels: list[socket.socket]) -> None:
        self.listener = listener
        self.channels = channels
        self.open = [0] * (len(channels) + 1)
        """Open connections per process, as handed and reported closed."""
        self.alive = [True] * (len(channels) + 1)
        """Index 0, this process, always is."""
        self._turn = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._serve_here: Callable[[socket.socket], None] | None = None

    def start(
        self, loop: asyncio.AbstractEventLoop, serve_here: Callable[[socket.socket], None]
    ) -> None:
        self._loop, self._serve_here = loop, serve_here
        self.listener.setblocking(False)
        loop.add_reader(self.listener.fileno(), self._accept)
        for index, channel in enumerate(self.channels, start=1):
            channel.setblocking(False)
            loop.add_reader(channel.fileno(), self._reported, index)

    def stop(self) -> None:
        """Accept no more (the listening socket stays open: its owner closes it)."""
        if self._loop is not None:
            self._loop.remove_reader(self.listener.fileno())

    def closed_here(self) -> None:
        self.open[0] = max(0, self.open[0] - 1)

    def choose(self, skip: frozenset[int] = frozenset()) -> int:
        """The live process with the fewest open connections; ties taken in turn (this
        process, index 0, is never skipped)."""
        count = len(self.open)
        _, offset = min(
            (self.open[i], (i - self._turn) % count)
            for i in range(count)
            if self.alive[i] and i not in skip
        )
        chosen = (offset + self._turn) % count
        self._turn = (chosen + 1) % count
        return chosen

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors, a connection reset before accept
                LOG.warning("accepting a connection failed: %s", exc.strerror or exc)
                return
            self.hand(conn)

    def hand(self, conn: socket.socket) -> int:
        """Give ``conn`` to a process; which one."""
        skip: set[int] = set()
        while True:
            index = self.choose(frozenset(skip))
            if index == 0:
                assert self._serve_here is not None
                self.open[0] += 1
                self._serve_here(conn)
                return 0
            try:
                socket.send_fds(self.channels[index - 1], [CONNECTION], [conn.fileno()])
            except BlockingIOError:
                skip.add(index)  # its channel is full: another process takes this one
                continue
            except OSError:
                self._lost(index)
                continue
            self.open[index] += 1
            conn.close()  # the worker holds its own descriptor now
            return index

    def _reported(self, index: int) -> None:
        channel = self.channels[index - 1]
        while True:
            try:
                message = channel.recv(4096)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message = b""
            if not message:
                self._lost(index)
                return
            self.open[index] = max(0, self.open[index] - message.count(CLOSED))

    def _lost(self, index: int) -> None:
        if not self.alive[index]:
            return
        self.alive[index] = False
        if self._loop is not None:
            self._loop.remove_reader(self.channels[index - 1].fileno())
        LOG.warning(
            "a worker process stopped; its connections are gone and the others take new ones"
        )


class Receiver:
    """A worker's side: takes the connections the supervisor hands over and reports each one
    it closes."""

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel
        self._loop: asyncio.AbstractEventLoop | None = None
        self._serve_here: Callable[[socket.socket], None] | None = None
        self._unsent = 0

    def start(
        self, loop: asyncio.AbstractEventLoop, serve_here: Callable[[socket.socket], None]
    ) -> None:
        self._loop, self._serve_here = loop, serve_here
        self.channel.setblocking(False)
        loop.add_reader(self.channel.fileno(), self._receive)

    def stop(self) -> None:
        """Take no more connections (the supervisor has stopped handing them by now)."""
        if self._loop is not None:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(self.channel.fileno())

    def _receive(self) -> None:
        assert self._serve_here is not None
        while True:
            try:
                message, fds, _flags, _address = socket.recv_fds(self.channel, 16, 4)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message, fds = b"", []
            for fd in fds:
                try:
                    conn = socket.socket(fileno=fd)
                except OSError:  # not a socket: not what the supervisor sends
                    os.close(fd)
                    continue
                if message == CONNECTION and conn.type == socket.SOCK_STREAM:
                    self._serve_here(conn)
                else:  # not what the supervisor sends: never served
                    conn.close()
            if not message:  # the supervisor is gone (the kernel ends this process too)
                self.stop()
                return

    def closed_here(self) -> None:
        self._unsent += 1
        try:
            self.channel.send(CLOSED * self._unsent)
        except (BlockingIOError, InterruptedError):
            return  # told with the next one
        except OSError:
            pass
        self._unsent = 0
