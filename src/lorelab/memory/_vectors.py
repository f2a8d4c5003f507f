"""Stored vectors: written with each experience and lesson, read through a per-connection cache.

Semantic scoring compares the query with every stored experience vector, so the vectors are
kept in memory per open connection and brought up to date before each retrieval: rows newer
than the cache are appended (ids only grow), and a reindex bumps ``vectors_generation`` in
``memory_state`` so every cache reloads. The model is Matryoshka-trained (a prefix of a vector
is itself an embedding), so a store is scanned in two stages: every vector's first
:data:`COARSE_DIMS` dimensions (float32, renormalised) pick a shortlist of ``shortlist``
candidates, and only those are scored with the full 256 dimensions (kept as fp16). Up to
``shortlist`` usable vectors, the scan is exact.

A process that has not imported numpy scans a store of at most ``shortlist`` vectors without
it (:func:`small_store_scan`): the fp16 blobs are read once per connection as Python floats and
scored in float64, so a hook or ``memory prepare`` on such a store never imports numpy, whose
import alone costs more than its brief. A process that has numpy (it recorded, or it serves a
larger store) uses the numpy cache, which scores its shortlist in float64 too; on the same
vectors the two give the same cosines to within 1e-12 (tested).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from lorelab.memory import _embedding, _numpy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from lorelab.memory._db import Database

REINDEX_BATCH: Final = 512
COARSE_DIMS: Final = 64


def experience_text(task: str) -> str:
    """What an experience's vector embeds: its task, the words a later task is compared with."""
    return task


def insert_experience_vectors(conn: sqlite3.Connection, rows: list[tuple[int, bytes]]) -> None:
    """Store ``(experience id, vector blob)`` pairs (in the caller's transaction)."""
    conn.executemany(
        "INSERT OR REPLACE INTO experience_vectors (id, model, vector) VALUES (?, ?, ?)",
        [(number, _embedding.MODEL_ID, blob) for number, blob in rows],
    )


def insert_lesson_vector(conn: sqlite3.Connection, seq: int, blob: bytes) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO lesson_vectors (seq, model, vector) VALUES (?, ?, ?)",
        (seq, _embedding.MODEL_ID, blob),
    )


def has_vectors(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM experience_vectors LIMIT 1").fetchone() is not None


def _generation(conn: sqlite3.Connection) -> int:
    found = conn.execute(
        "SELECT value FROM memory_state WHERE key = 'vectors_generation'"
    ).fetchone()
    return int(found[0]) if found else 0


def _rows_after(conn: sqlite3.Connection, through: int, limit: int = -1) -> list[tuple[Any, ...]]:
    """``(id, vector, project, trust)`` of the experience vectors after id ``through``, ids
    ascending, at most ``limit`` of them (-1: all)."""
    return conn.execute(
        "SELECT v.id, v.vector, e.project, e.trust FROM experience_vectors v "
        "JOIN experiences e ON e.id = v.id WHERE v.id > ? AND v.model = ? ORDER BY v.id LIMIT ?",
        (through, _embedding.MODEL_ID, limit),
    ).fetchall()


@dataclass(slots=True)
class VectorCache:
    """Every stored experience vector of one connection, as arrays."""

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
    """fp16 (capacity x 256); rows [0, size) are in use."""
    coarse: Any = None
    """float32 (capacity x COARSE_DIMS): each vector's prefix, renormalised."""
    codes: dict[str, int] = field(default_factory=dict)

    def refresh(self, conn: sqlite3.Connection) -> None:
        generation = _generation(conn)
        if generation != self.generation:
            self._reset(generation)
        rows = _rows_after(conn, self.through)
        if rows:
            self._append(rows)

    def _reset(self, generation: int) -> None:
        _numpy.load()
        import numpy as np

        self.generation, self.through, self.size = generation, 0, 0
        self.ids = np.zeros(0, dtype=np.int64)
        self.projects = np.zeros(0, dtype=np.int32)
        self.verified = np.zeros(0, dtype=bool)
        self.matrix = np.zeros((0, _embedding.DIMENSIONS), dtype=np.float16)
        self.coarse = np.zeros((0, COARSE_DIMS), dtype=np.float32)
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
        full = _embedding.from_blobs([bytes(row[1]) for row in rows])
        self.matrix[self.size : end] = full
        self.coarse[self.size : end] = _prefix(full)
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
        all of them up to ``shortlist``, else the ``shortlist`` best by the coarse prefix."""
        _numpy.load()
        import numpy as np

        vector = np.asarray(query, dtype=np.float64)

        keep = self.verified[: self.size]
        if project is not None:
            codes = self.projects[: self.size]
            keep = keep & ((codes == -1) | (codes == self.codes.get(project, -2)))
        rows = np.flatnonzero(keep)
        if len(rows) > shortlist:
            # Score every prefix in place (no copy of the matrix), then drop the unusable.
            # einsum, not BLAS: one memory-bound pass, without BLAS threads spinning for CPU.
            prefix = _prefix(vector[np.newaxis, :])[0]
            rough = np.einsum("ij,j->i", self.coarse[: self.size], prefix)
            rough[~keep] = -np.inf
            rows = np.argpartition(-rough, shortlist)[:shortlist]
        scores = self.matrix[rows].astype(np.float64) @ vector
        result: npt.NDArray[np.int64] = self.ids[rows]
        return result, scores


@dataclass(slots=True)
class SmallStoreCache:
    """Every stored experience vector of one connection as Python floats, kept while the store
    holds at most ``limit`` of them: ``(id, project, verified, vector)`` rows, ids ascending."""

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
        found = _rows_after(conn, self.through, self.limit + 1 - len(self.rows))
        if len(self.rows) + len(found) > self.limit:
            self.rows, self.too_large = [], True  # vectors are never deleted: it stays large
            return False
        for rowid, blob, project, trust in found:
            vector = _embedding.vector_of(bytes(blob))
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
    conn: sqlite3.Connection, query: Sequence[float], project: str | None, shortlist: int
) -> dict[int, float] | None:
    """The cosine of every verified experience a brief for ``project`` may use, computed
    without numpy; None when the store holds more than ``shortlist`` vectors (then the cached
    numpy scan, :meth:`VectorCache.similarities`, is the one to use). Call inside a read or
    write transaction."""
    cache = _of_connection(
        _small, conn, lambda: SmallStoreCache(shortlist), lambda held: held.limit == shortlist
    )
    if not cache.refresh(conn):
        return None
    return {
        rowid: _embedding.dot(vector, query)
        for rowid, owner, verified, vector in cache.rows
        if verified and (project is None or owner is None or owner == project)
    }


def stored_vectors(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, tuple[float, ...]]:
    """The stored vectors of the experiences ``rowids`` (those that have one), as floats."""
    marks = ",".join("?" * len(rowids))
    found = conn.execute(
        f"SELECT id, vector FROM experience_vectors WHERE model = ? AND id IN ({marks})",
        (_embedding.MODEL_ID, *rowids),
    ).fetchall()
    return {int(rowid): _embedding.vector_of(bytes(blob)) for rowid, blob in found}


def _prefix(vectors: Any) -> Any:
    """The first COARSE_DIMS dimensions of each row, renormalised."""
    _numpy.load()
    import numpy as np

    head = np.ascontiguousarray(vectors[:, :COARSE_DIMS], dtype=np.float32)
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return head / norms


def _grow(array: Any, capacity: int) -> Any:
    _numpy.load()
    import numpy as np

    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def cache_for(conn: sqlite3.Connection) -> VectorCache:
    """The up-to-date vector cache of ``conn`` (call inside a read or write transaction)."""
    cache = _of_connection(_caches, conn, VectorCache)
    cache.refresh(conn)
    return cache


def forget(conn: sqlite3.Connection) -> None:
    """Drop the caches of a connection being closed."""
    with _caches_lock:
        for caches in (_caches, _small):
            entry = caches.get(id(conn))
            if entry is not None and entry[0] is conn:
                del caches[id(conn)]


@dataclass(frozen=True, slots=True)
class ReindexCounts:
    experiences: int
    lessons: int


def missing_counts(db: Database) -> ReindexCounts:
    """How many experiences and lessons have no vector of the bundled model."""

    def read(conn: sqlite3.Connection) -> ReindexCounts:
        experiences = conn.execute(
            "SELECT count(*) FROM experiences e WHERE NOT EXISTS (SELECT 1 FROM "
            "experience_vectors v WHERE v.id = e.id AND v.model = ?)",
            (_embedding.MODEL_ID,),
        ).fetchone()[0]
        lessons = conn.execute(
            "SELECT count(*) FROM lessons l WHERE NOT EXISTS (SELECT 1 FROM "
            "lesson_vectors v WHERE v.seq = l.seq AND v.model = ?)",
            (_embedding.MODEL_ID,),
        ).fetchone()[0]
        return ReindexCounts(int(experiences), int(lessons))

    return db.read(read)


def _missing(conn: sqlite3.Connection, *, kind: str, after: int) -> list[tuple[int, str]]:
    if kind == "experience":
        sql = (
            "SELECT e.id, e.task FROM experiences e WHERE e.id > ? AND NOT EXISTS (SELECT 1 "
            "FROM experience_vectors v WHERE v.id = e.id AND v.model = ?) ORDER BY e.id LIMIT ?"
        )
    else:
        sql = (
            "SELECT l.seq, l.requirements FROM lessons l WHERE l.seq > ? AND NOT EXISTS "
            "(SELECT 1 FROM lesson_vectors v WHERE v.seq = l.seq AND v.model = ?) "
            "ORDER BY l.seq LIMIT ?"
        )
    found = conn.execute(sql, (after, _embedding.MODEL_ID, REINDEX_BATCH)).fetchall()
    return [(int(number), str(text)) for number, text in found]


def _store_batch(db: Database, kind: str, batch: list[tuple[int, str]]) -> None:
    texts = [experience_text(text) if kind == "experience" else text for _, text in batch]
    blobs = _embedding.stored_blobs(texts)
    pairs = [(number, blob) for (number, _), blob in zip(batch, blobs, strict=True)]

    def write(conn: sqlite3.Connection) -> None:
        if kind == "experience":
            insert_experience_vectors(conn, pairs)
        else:
            for seq, blob in pairs:
                insert_lesson_vector(conn, seq, blob)

    db.write(write)


def reindex(db: Database, progress: Callable[[int], None]) -> ReindexCounts:
    """Compute the vector of every experience and lesson that has none; ``progress(n)`` per batch.

    Each batch is its own transaction, so an interrupted reindex keeps what it wrote and a
    second run carries on. The vector generation is bumped at the end (open caches reload).
    """
    done = {"experience": 0, "lesson": 0}
    for kind in done:
        for batch in _batches(db, kind):
            _store_batch(db, kind, batch)
            done[kind] += len(batch)
            progress(len(batch))
    if done["experience"]:
        db.write(
            lambda conn: conn.execute(
                "UPDATE memory_state SET value = value + 1 WHERE key = 'vectors_generation'"
            )
        )
    return ReindexCounts(done["experience"], done["lesson"])


def _batches(db: Database, kind: str) -> Iterator[list[tuple[int, str]]]:
    after = 0
    while True:
        batch = db.read(functools.partial(_missing, kind=kind, after=after))
        if not batch:
            return
        yield batch
        after = batch[-1][0]
