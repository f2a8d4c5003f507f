"""The ends of a supervised child's pipes: a hashed tail, a bounded head, the stdin feed."""

from __future__ import annotations

import hashlib
import os
import selectors
import time
from typing import Final

_CHUNK: Final = 64 * 1024


class Tail:
    """Keeps the last ``limit`` bytes written to it, and hashes and counts everything."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.digest = hashlib.sha256()
        self.total = 0

    def read(self, fd: int) -> bool:
        """Read one chunk; return False at EOF."""
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.digest.update(chunk)
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.limit:
            del self.data[: len(self.data) - self.limit]
        return True

    def value(self) -> bytes:
        return bytes(self.data[-self.limit :]) if self.limit else b""


class Head:
    """Keeps output up to ``limit`` bytes; reading stops one byte past it (``overflow``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.overflow = False

    def read(self, fd: int) -> bool:
        """Read one chunk; return False at EOF. Never reads past the bound's first extra byte."""
        try:
            chunk = os.read(fd, min(_CHUNK, self.limit + 1 - len(self.data)))
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.data += chunk
        if len(self.data) > self.limit:
            self.overflow = True
        return True


class StdinFeed:
    """The input still to be written to the child's stdin."""

    def __init__(self, data: bytes) -> None:
        self.pending = memoryview(data)

    def write(self, fd: int) -> bool:
        """Write one chunk; return False when done or the child closed stdin."""
        try:
            written = os.write(fd, self.pending[:_CHUNK])
        except BlockingIOError:
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False
        self.pending = self.pending[written:]
        return bool(self.pending)


def drain(fd: int, sink: Tail | Head, grace_s: float) -> None:
    """Read what is left in a pipe for at most ``grace_s`` (0: only what is ready now)."""
    end = time.monotonic() + grace_s
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if not selector.select(max(end - time.monotonic(), 0)):
                return
            if not sink.read(fd) or (isinstance(sink, Head) and sink.overflow):
                return
