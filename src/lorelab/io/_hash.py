"""Streaming SHA-256 of regular files, capped in size, and of in-memory bytes."""

from __future__ import annotations

import hashlib
import os
from typing import Final

from lorelab.io._bounded import MIB, stream_regular

LAUNCHER_HASH_CAP: Final = 512 * MIB
SCRIPT_HASH_CAP: Final = 8 * MIB


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str], *, cap: int) -> str:
    """Hex SHA-256 of a regular file read in chunks; refuses other files and files over ``cap``.

    The file is opened once and hashed through that descriptor; a file that grows past the cap
    while it is read is refused, never hashed in part.
    """
    digest = hashlib.sha256()
    stream_regular(path, cap, digest.update, what=f"the hash cap of {cap}")
    return digest.hexdigest()
