"""Bounded reads: one descriptor, regular files only, the size limit enforced while reading."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Final, Literal

from lorelab.errors import InputFileError, UsageError

MIB: Final = 1024 * 1024
MANIFEST_LIMIT: Final = 2 * MIB
FIXTURE_LIMIT: Final = 32 * MIB
LIMITS: Final[dict[str, int]] = {"manifest": MANIFEST_LIMIT, "fixture": FIXTURE_LIMIT}

InputKind = Literal["manifest", "fixture"]
_CHUNK: Final = 1024 * 1024


def describe_mode(mode: int) -> str:
    """Name the kind of file a ``st_mode`` describes, for error messages."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """Open ``path`` once for reading and return the descriptor with its ``fstat``.

    ``O_NONBLOCK`` keeps a FIFO from blocking the open; everything that is not a regular file
    is refused on the descriptor itself, so a path swapped after the open cannot change what is
    read. The caller owns (and must close) the descriptor.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputFileError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{name}: is a directory, expected a regular file") from None
    except OSError as exc:
        raise InputFileError(f"{name}: cannot open: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(f"{name}: is {describe_mode(st.st_mode)}, expected a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_bounded(
    path: str | os.PathLike[str], kind: InputKind = "manifest", limit: int | None = None
) -> bytes:
    """Read a whole regular file of at most ``limit`` bytes (default: the ``kind``'s limit).

    The limit may be lowered by the caller, never raised above the kind's limit. Reading stops
    one byte past the limit, so a file that grows during the read is refused too.
    """
    ceiling = LIMITS[kind]
    if limit is None:
        limit = ceiling
    if not 0 < limit <= ceiling:
        raise UsageError(f"read limit {limit} for a {kind} must be between 1 and {ceiling} bytes")
    chunks: list[bytes] = []
    stream_regular(path, limit, chunks.append, what=f"the {kind} limit of {limit}")
    return b"".join(chunks)


def stream_regular(
    path: str | os.PathLike[str],
    limit: int,
    sink: Callable[[bytes], object],
    *,
    what: str,
    hint: str = "",
) -> int:
    """Feed a regular file of at most ``limit`` bytes to ``sink`` chunk by chunk; its size.

    One descriptor; a file over ``limit`` is refused before reading ("exceeds ``what``", then
    ``hint``), and one that grows past it while read is refused one byte past the limit.
    """
    name = os.fspath(path)
    fd, st = open_regular(name)
    try:
        if st.st_size > limit:
            raise InputFileError(f"{name}: {st.st_size} bytes exceeds {what}{hint}")
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise InputFileError(f"{name}: grew past {what} bytes")
            sink(chunk)
    finally:
        os.close(fd)
    return total
