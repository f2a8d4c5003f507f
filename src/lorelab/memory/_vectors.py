"""Stored vectors: written with each experience and lesson, read through a per-connection cache.

Semantic scoring compares the query with every stored experience vector, so the vectors are
kept in memory per open connection and brought up to date before each retrieval: rows newer
than the cache are appended (ids only grow), and a reindex bumps ``vectors_generation`` in
``memory_state`` so every cache reloads. Only the vectors of the store's model
(:mod:`lorelab.memory._embedders`) are read. A large store is scanned in two stages: every
vector's short coarse row (float32, renormalised: WordLlama's first 64 dimensions, MiniLM's
fixed 96-dimension projection) picks a shortlist of ``shortlist`` candidates, and only those
are scored with the full vectors (kept as fp16). Up to ``shortlist`` usable vectors, the scan
is exact.

A process that has not imported numpy scans a store of at most ``shortlist`` vectors without
it (:func:`small_store_scan`): the fp16 blobs are read once per connection as Python floats and
scored in float64, so a hook or ``memory prepare`` on such a store never imports numpy, whose
import alone costs more than its brief. A process that has numpy (it recorded, or it serves a
larger store) uses the numpy cache, which scores its shortlist in float64 too; on the same
vectors the two give the same cosines to within 1e-12 (tested).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from lorelab.memory import _numpy
from lorelab.memory._embedders import Embedder, dot

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def experience_text(task: str) -> str:
    """What an experience's vector embeds: its task, the words a later task is compared with."""
    return task


def insert_experience_vectors(
    conn: sqlite3.Connection, embedder: Embedder, rows: list[tuple[int, bytes]]
) -> None:
    """Store ``(experience id, vector blob)`` pairs of ``embedder``'s model (in the caller's
    transaction)."""
    conn.executemany(
        "INSERT OR REPLACE INTO experience_vectors (id, model, vector) VALUES (?, ?, ?)",
        [(number, embedder.model_id, blob) for number, blob in rows],
    )


def insert_lesson_vector(
    conn: sqlite3.Connection, embedder: Embedder, seq: int, blob: bytes
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO lesson_vectors (seq, model, vector) VALUES (?, ?, ?)",
        (seq, embedder.model_id, blob),
    )


def has_vectors(conn: sqlite3.Connection, embedder: Embedder) -> bool:
    """Whether any experience has a vector of ``embedder``'s model."""
    found = conn.execute(
        "SELECT 1 FROM experience_vectors WHERE model = ? LIMIT 1", (embedder.model_id,)
    ).fetchone()
    return found is not None


def _generation(conn: sqlite3.Connection) -> int:
    found = conn.execute(
        "SELECT value FROM memory_state WHERE key = 'vectors_generation'"
    ).fetchone()
    return int(found[0]) if found else 0


def _rows_after(
    conn: sqlite3.Connection, model_id: str, through: int, limit: int = -1
) -> list[tuple[Any, ...]]:
    """``(id, vector, project, trust)`` of the experience vectors of ``model_id`` after id
    ``through``, ids ascending, at most ``limit`` of them (-1: all)."""
    return conn.execute(
        "SELECT v.id, v.vector, e.project, e.trust FROM experience_vectors v "
        "JOIN experiences e ON e.id = v.id WHERE v.model = ? AND v.id > ? ORDER BY v.id LIMIT ?",
        (model_id, through, limit),
    ).fetchall()


@dataclass(slots=True)
class VectorCache:
    """Every stored experience vector of one connection (of one model), as arrays."""

    embedder: Embedder
    generation: int = -1
    through: int = 0
    size: int = 0
    ids: Any = None
    """int64 experience ids, ascending."""
    projects: Any = None
    """int32 project codes (-1: no project)."""
    verified: Any = None
    """bool: the experience is verified."""
    matrix: Any = None
    """fp16 (capacity x dimensions); rows [0, size) are in use."""
    coarse: Any = None
    """float32 (capacity x the model's coarse dimensions): each vector's coarse row."""
    codes: dict[str, int] = field(default_factory=dict)

    def refresh(self, conn: sqlite3.Connection) -> None:
        generation = _generation(conn)
        if generation != self.generation:
            self._reset(generation)
        rows = _rows_after(conn, self.embedder.model_id, self.through)
        if rows:
            self._append(rows)

    def _reset(self, generation: int) -> None:
        _numpy.load()
        import numpy as np

        self.generation, self.through, self.size = generation, 0, 0
        self.ids = np.zeros(0, dtype=np.int64)
        self.projects = np.zeros(0, dtype=np.int32)
        self.verified = np.zeros(0, dtype=bool)
        self.matrix = np.zeros((0, self.embedder.dimensions), dtype=np.float16)
        self.coarse = np.zeros((0, self.embedder.coarse_dims), dtype=np.float32)
        self.codes = {}

    def _append(self, rows: list[tuple[Any, ...]]) -> None:
        count = len(rows)
        needed = self.size + count
        if needed > len(self.ids):
            capacity = max(needed, 2 * len(self.ids), 1024)
            self.ids = _grow(self.ids, capacity)
            self.projects = _grow(self.projects, capacity)
            self.verified = _grow(self.verified, capacity)
            self.matrix = _grow(self.matrix, capacity)
            self.coarse = _grow(self.coarse, capacity)
        end = self.size + count
        self.ids[self.size : end] = [int(row[0]) for row in rows]
        self.projects[self.size : end] = [self.code(row[2]) for row in rows]
        self.verified[self.size : end] = [row[3] == "verified" for row in rows]
        full = self.embedder.from_blobs([bytes(row[1]) for row in rows])
        self.matrix[self.size : end] = full
        self.coarse[self.size : end] = self.embedder.coarse(full)
        self.size = end
        self.through = int(rows[-1][0])

    def code(self, project: str | None) -> int:
        if project is None:
            return -1
        return self.codes.setdefault(project, len(self.codes))

    def similarities(
        self, query: Sequence[float], project: str | None, shortlist: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Verified experiences a brief for ``project`` may use, and their cosines (float64):
        all of them up to ``shortlist``, else the ``shortlist`` best by the coarse rows."""
        _numpy.load()
        import numpy as np

        vector = np.asarray(query, dtype=np.float64)

        keep = self.verified[: self.size]
        if project is not None:
            codes = self.projects[: self.size]
            keep = keep & ((codes == -1) | (codes == self.codes.get(project, -2)))
        rows = np.flatnonzero(keep)
        if len(rows) > shortlist:
            # Score every coarse row in place (no copy of the matrix), then drop the unusable.
            # einsum, not BLAS: one memory-bound pass, without BLAS threads spinning for CPU.
            prefix = self.embedder.coarse(vector[np.newaxis, :])[0]
            rough = np.einsum("ij,j->i", self.coarse[: self.size], prefix)
            rough[~keep] = -np.inf
            rows = np.argpartition(-rough, shortlist)[:shortlist]
        scores = self.matrix[rows].astype(np.float64) @ vector
        result: npt.NDArray[np.int64] = self.ids[rows]
        return result, scores


@dataclass(slots=True)
class SmallStoreCache:
    """Every stored experience vector (of one model) of one connection as Python floats, kept
    while the store holds at most ``limit`` of them: ``(id, project, verified, vector)`` rows,
    ids ascending."""

    embedder: Embedder
    limit: int
    generation: int = -1
    through: int = 0
    rows: list[tuple[int, str | None, bool, tuple[float, ...]]] = field(default_factory=list)
    too_large: bool = False

    def refresh(self, conn: sqlite3.Connection) -> bool:
        """Bring the rows up to date; False once the store holds more than ``limit`` vectors."""
        generation = _generation(conn)
        if generation != self.generation:
            self.generation, self.through, self.rows, self.too_large = generation, 0, [], False
        if self.too_large:
            return False
        found = _rows_after(
            conn, self.embedder.model_id, self.through, self.limit + 1 - len(self.rows)
        )
        if len(self.rows) + len(found) > self.limit:
            self.rows, self.too_large = [], True  # vectors are never deleted: it stays large
            return False
        for rowid, blob, project, trust in found:
            vector = self.embedder.vector_of(bytes(blob))
            self.rows.append((int(rowid), project, trust == "verified", vector))
        if found:
            self.through = int(found[-1][0])
        return True


# By id(connection), holding the connection so the id is not reused while the entry lives;
# Database.close forgets it.
_caches: dict[int, tuple[sqlite3.Connection, VectorCache]] = {}
_small: dict[int, tuple[sqlite3.Connection, SmallStoreCache]] = {}
_caches_lock = threading.Lock()
C = TypeVar("C")


def _of_connection(
    caches: dict[int, tuple[sqlite3.Connection, C]],
    conn: sqlite3.Connection,
    make: Callable[[], C],
    fits: Callable[[C], bool] = lambda held: True,
) -> C:
    """The cache ``caches`` holds for ``conn``, made (or made again, when it does not fit)."""
    with _caches_lock:
        entry = caches.get(id(conn))
        if entry is None or entry[0] is not conn or not fits(entry[1]):
            entry = caches[id(conn)] = (conn, make())
    return entry[1]


def small_store_scan(
    conn: sqlite3.Connection,
    embedder: Embedder,
    query: Sequence[float],
    project: str | None,
    shortlist: int,
) -> dict[int, float] | None:
    """The cosine of every verified experience a brief for ``project`` may use, computed
    without numpy; None when the store holds more than ``shortlist`` vectors (then the cached
    numpy scan, :meth:`VectorCache.similarities`, is the one to use). Call inside a read or
    write transaction."""
    cache = _of_connection(
        _small,
        conn,
        lambda: SmallStoreCache(embedder, shortlist),
        lambda held: held.limit == shortlist and held.embedder is embedder,
    )
    if not cache.refresh(conn):
        return None
    return {
        rowid: dot(vector, query)
        for rowid, owner, verified, vector in cache.rows
        if verified and (project is None or owner is None or owner == project)
    }


def stored_vectors(
    conn: sqlite3.Connection, embedder: Embedder, rowids: list[int]
) -> dict[int, tuple[float, ...]]:
    """The stored vectors (of ``embedder``'s model) of the experiences ``rowids`` (those that
    have one), as floats."""
    marks = ",".join("?" * len(rowids))
    found = conn.execute(
        f"SELECT id, vector FROM experience_vectors WHERE model = ? AND id IN ({marks})",
        (embedder.model_id, *rowids),
    ).fetchall()
    return {int(rowid): embedder.vector_of(bytes(blob)) for rowid, blob in found}


def _grow(array: Any, capacity: int) -> Any:
    _numpy.load()
    import numpy as np

    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def cache_for(conn: sqlite3.Connection, embedder: Embedder) -> VectorCache:
    """The up-to-date vector cache of ``conn`` for ``embedder``'s vectors (call inside a read
    or write transaction)."""
    cache = _of_connection(
        _caches, conn, lambda: VectorCache(embedder), lambda held: held.embedder is embedder
    )
    cache.refresh(conn)
    return cache


def forget(conn: sqlite3.Connection) -> None:
    """Drop the caches of a connection being closed."""
    with _caches_lock:
        for caches in (_caches, _small):
            entry = caches.get(id(conn))
            if entry is not None and entry[0] is conn:
                del caches[id(conn)]
