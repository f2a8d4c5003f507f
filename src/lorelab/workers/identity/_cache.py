"""Hashes of bound files, reused only while the file provably has not changed.

Every identity check binds the argv again and hashes what it binds (the launcher, scripts,
modules, every module of lorelab itself), before and after every call. Most of those files
never change during an evaluation, so a file's hash is kept with the file's status: device,
inode, size, mode, modification and status-change times (``st_ctime``). The next check
``stat``s the file again and hashes it again unless every one of these is the same.

Any write to a file, and any ``utime``, ``chmod`` or rename onto it, sets its status-change
time to the current time, which no unprivileged process can set back: a changed file always
differs in ``st_ctime`` (only changing the system clock could defeat it). Timestamps are
coarse (a kernel tick), so a file written in the same tick as it was hashed could change
without a new ``st_ctime``: a hash is kept only when the file's times are
:data:`STABLE_AFTER_NS` older than the hashing and the file's status was the same before
and after it was read. A file changed more recently than that is hashed on every check.
"""

from __future__ import annotations

import os
from time import time_ns
from typing import Final

from lorelab.io import sha256_file

STABLE_AFTER_NS: Final = 2_000_000_000
_Status = tuple[int, int, int, int, int, int]
_KEPT: dict[tuple[str, int], tuple[_Status, str]] = {}


def _status(path: str) -> _Status | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns, st.st_ctime_ns)


def file_sha256(path: str | os.PathLike[str], *, cap: int) -> str:
    """``sha256_file(path, cap=cap)``, reusing the last hash of an unchanged file.

    Errors are those of :func:`lorelab.io.sha256_file` (a file that cannot be hashed is never
    kept).
    """
    name = os.fspath(path)
    key = (name, cap)
    before = _status(name)
    kept = _KEPT.get(key)
    if before is not None and kept is not None and kept[0] == before:
        return kept[1]
    _KEPT.pop(key, None)
    digest = sha256_file(name, cap=cap)
    after = _status(name)
    if before is not None and after == before:
        newest = max(after[4], after[5])
        if time_ns() - newest > STABLE_AFTER_NS:
            _KEPT[key] = (after, digest)
    return digest


def forget() -> None:
    """Drop every kept hash (the next check hashes every file)."""
    _KEPT.clear()
