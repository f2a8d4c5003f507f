"""One completion at a time per base URL (``--serialize-calls``), across every adapter process
of this user: a local server with one slot queues concurrent requests anyway, and a queued
request spends the caller's time budget while it waits out of sight. Serialised, the wait
happens here, is bounded by the call's own deadline, and is reported (``queue wait``).

The lock is an exclusive ``flock`` on a file in a directory of this user's own (0700, checked
before use), named by the SHA-256 of the base URL.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from lorelab.workers.adapters._agent import AdapterFailure

POLL_S: Final = 0.05


def lock_path(base_url: str) -> Path:
    """The lock file of ``base_url`` in this user's lock directory (created 0700)."""
    directory = Path(tempfile.gettempdir()) / f"lorelab-openai-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(directory)
    except OSError as exc:
        raise AdapterFailure("lock-unusable", f"{directory}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise AdapterFailure(
            "lock-unusable", f"{directory} is not a private directory of this user"
        )
    digest = hashlib.sha256(base_url.encode("utf-8")).hexdigest()[:24]
    return directory / f"{digest}.lock"


@contextmanager
def serialized(base_url: str, deadline: float) -> Iterator[float]:
    """Hold the lock of ``base_url``; yield the seconds spent waiting for it. Waiting past
    ``deadline`` fails the call (``queue-timeout``) without a request being sent."""
    path = lock_path(base_url)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    started = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    waited = time.monotonic() - started
                    raise AdapterFailure(
                        "queue-timeout",
                        f"waited {waited:.1f} s for the other calls to {base_url} to finish; "
                        "no request was sent",
                    ) from None
                time.sleep(POLL_S)
        yield time.monotonic() - started
    finally:
        os.close(descriptor)
