"""The user cache directory: derived tables kept between processes to make start-up fast.

Everything here can be rebuilt from what lorelab ships, so a missing, damaged or unwritable
cache is never an error: each reader checks what it reads (by content hash) and rebuilds.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

CACHE_ENV: Final = "LORELAB_CACHE_DIR"


def cache_dir() -> Path:
    """``$LORELAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/lorelab``, else ``~/.cache/lorelab``."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "lorelab"


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
