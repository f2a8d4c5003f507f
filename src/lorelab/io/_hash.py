"""Streaming SHA-256 of regular files, capped in size, and of in-memory bytes."""

from __future__ import annotations

import hashlib
import os
from typing import Final

from lorelab.errors import InputFileError
from lorelab.io._bounded import MIB, open_regular

LAUNCHER_HASH_CAP: Final = 512 * MIB
SCRIPT_HASH_CAP: Final = 8 * MIB
_CHUNK: Final = 1024 * 1024


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str], *, cap: int) -> str:
    """Hex SHA-256 of a regular file read in chunks; refuses other files and files over ``cap``.

    The file is opened once and hashed through that descriptor; a file that grows past the cap
    while it is read is refused, never hashed in part.
    """
    name = os.fspath(path)
    fd, st = open_regular(name)
    try:
        if st.st_size > cap:
            raise InputFileError(f"{name}: {st.st_size} bytes exceeds the hash cap of {cap}")
        digest = hashlib.sha256()
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, cap + 1 - total))
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise InputFileError(f"{name}: grew past the hash cap of {cap} bytes")
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()
