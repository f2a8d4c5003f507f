"""Query vectors shared by the processes that serve one store.

``lorelab serve`` runs one process per core on the same store, and each keeps its own recent
query vectors (:data:`lorelab.memory._search.QUERY_VECTORS_KEPT`). A task one process has
embedded would otherwise be embedded again by the next process that is asked for it: the
prompt hook's brief and the agent's own ``lore_prepare`` of the same task often arrive on two
connections, so in two processes. A :class:`SharedQueryVectors` is a small SQLite file beside
them that every such process reads before it embeds, and writes what it embedded.

- **Only a cache.** A vector depends only on the model and the text (the model is
  deterministic), so a kept vector is the one the model would compute again; it is stored as
  the exact float64 values the model's query function returned, under the SHA-256 of the model
  id and the text. A row that does not decode to the model's dimensions is ignored.
- **In the user's private state directory** (``lorelab._state``: 0700, owned by the user, never
  through a symlink), one file per store: never in a memory home, which may sit in a project
  tree that someone else wrote. A file that is not the user's own, private regular file is not
  used.
- **Never in the way.** A read or write that fails, or would wait for another process's write,
  is skipped and the task is embedded as without the file; after a failure to open or use it,
  the process stops using it. At most :data:`KEPT` vectors are kept (the oldest go), and the
  server deletes the file when it stops (a server killed with SIGKILL leaves it to the next).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lorelab._state import NotPrivate, check_private

LOG: Final = logging.getLogger("lorelab.memory")
KEPT: Final = 4096
"""How many query vectors the file keeps (the most recently added)."""
PRUNE_EVERY: Final = 256
"""How many additions between two prunings of the oldest rows."""
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS query_vectors ("
    "seq INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, model TEXT NOT NULL, "
    "vector BLOB NOT NULL)"
)


def _key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(
        model_id.encode("utf-8", "surrogatepass") + b"\0" + text.encode("utf-8", "surrogatepass")
    ).digest()


def _not_private(path: Path) -> str | None:
    """Why ``path`` is not this user's own private regular file (None: it is, or is missing)."""
    try:
        check_private(os.lstat(path), path, "file")
    except FileNotFoundError:
        return None
    except NotPrivate as exc:
        return str(exc)
    return None


class SharedQueryVectors:
    """The query vectors of one store, shared between processes through ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._added = 0
        self.usable = True
        """False once opening or using the file failed: this process embeds as without it."""

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is not None or not self.usable:
            return self._conn
        problem = _not_private(self.path)
        if problem is not None:
            self._give_up(problem)
            return None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            os.close(fd)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA busy_timeout=0")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
            except BaseException:
                conn.close()
                raise
        except (OSError, sqlite3.Error) as exc:
            self._give_up(exc)
            return None
        self._conn = conn
        return conn

    def _give_up(self, problem: object) -> None:
        self.usable = False
        LOG.warning("shared query vectors %s: not used (%s)", self.path, problem)

    def get(self, model_id: str, dimensions: int, text: str) -> tuple[float, ...] | None:
        """The kept vector of ``text`` under ``model_id`` (None: none kept, or unusable)."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return None
            try:
                row = conn.execute(
                    "SELECT model, vector FROM query_vectors WHERE key = ?",
                    (_key(model_id, text),),
                ).fetchone()
            except sqlite3.OperationalError:  # busy, or the file went away: embed instead
                return None
            except sqlite3.Error as exc:
                self._give_up(exc)
                return None
        if row is None or row[0] != model_id or not isinstance(row[1], bytes):
            return None
        if len(row[1]) != 8 * dimensions:
            return None
        return struct.unpack(f"<{dimensions}d", row[1])

    def put(self, model_id: str, text: str, values: Sequence[float]) -> None:
        """Keep ``values`` as the vector of ``text`` under ``model_id`` (skipped when another
        process is writing)."""
        blob = struct.pack(f"<{len(values)}d", *values)
        with self._lock:
            conn = self._connection()
            if conn is None:
                return
            try:
                conn.execute(
                    "INSERT OR IGNORE INTO query_vectors (key, model, vector) VALUES (?, ?, ?)",
                    (_key(model_id, text), model_id, blob),
                )
                self._added += 1
                if self._added % PRUNE_EVERY == 0:
                    conn.execute(
                        "DELETE FROM query_vectors WHERE seq <= "
                        "(SELECT max(seq) FROM query_vectors) - ?",
                        (KEPT,),
                    )
            except sqlite3.OperationalError:  # busy: another process writes; skip
                return
            except sqlite3.Error as exc:
                self._give_up(exc)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None

    def remove(self) -> None:
        """Close, and delete the file with its WAL files (the last process serving the store
        does, when it stops: the vectors live as long as the server)."""
        self.close()
        self.usable = False
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")
