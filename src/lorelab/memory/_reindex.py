"""Reindexing: computing the vectors a store lacks, and switching the store's embedding model.

Built on the database (:mod:`lorelab.memory._db`) and the stored vectors
(:mod:`lorelab.memory._vectors`), which know nothing of it: the database closes a connection's
vector caches, so the vectors module must not import the database.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from lorelab.memory._db import Database
from lorelab.memory._embedders import Embedder, of_store, set_store_model, store_model_id
from lorelab.memory._vectors import experience_text, insert_experience_vectors, insert_lesson_vector

REINDEX_BATCH: Final = 512


@dataclass(frozen=True, slots=True)
class ReindexCounts:
    experiences: int
    lessons: int
    model: str = ""
    """The model id of the vectors the store uses after the reindex."""


def _missing_in(conn: sqlite3.Connection, embedder: Embedder) -> ReindexCounts:
    experiences = conn.execute(
        "SELECT count(*) FROM experiences e WHERE NOT EXISTS (SELECT 1 FROM "
        "experience_vectors v WHERE v.model = ? AND v.id = e.id)",
        (embedder.model_id,),
    ).fetchone()[0]
    lessons = conn.execute(
        "SELECT count(*) FROM lessons l WHERE NOT EXISTS (SELECT 1 FROM "
        "lesson_vectors v WHERE v.model = ? AND v.seq = l.seq)",
        (embedder.model_id,),
    ).fetchone()[0]
    return ReindexCounts(int(experiences), int(lessons), embedder.model_id)


def missing_counts(db: Database, target: Embedder | None = None) -> ReindexCounts:
    """How many experiences and lessons have no vector of ``target``'s model (default: the
    store's own)."""
    return db.read(lambda conn: _missing_in(conn, target or of_store(conn)))


def _missing(
    conn: sqlite3.Connection, *, embedder: Embedder, kind: str, after: int
) -> list[tuple[int, str]]:
    if kind == "experience":
        sql = (
            "SELECT e.id, e.task FROM experiences e WHERE e.id > ? AND NOT EXISTS (SELECT 1 "
            "FROM experience_vectors v WHERE v.model = ? AND v.id = e.id) ORDER BY e.id LIMIT ?"
        )
    else:
        sql = (
            "SELECT l.seq, l.requirements FROM lessons l WHERE l.seq > ? AND NOT EXISTS "
            "(SELECT 1 FROM lesson_vectors v WHERE v.model = ? AND v.seq = l.seq) "
            "ORDER BY l.seq LIMIT ?"
        )
    found = conn.execute(sql, (after, embedder.model_id, REINDEX_BATCH)).fetchall()
    return [(int(number), str(text)) for number, text in found]


def _store_batch(db: Database, embedder: Embedder, kind: str, batch: list[tuple[int, str]]) -> None:
    texts = [experience_text(text) if kind == "experience" else text for _, text in batch]
    blobs = embedder.stored_blobs(texts)
    pairs = [(number, blob) for (number, _), blob in zip(batch, blobs, strict=True)]

    def write(conn: sqlite3.Connection) -> None:
        if kind == "experience":
            insert_experience_vectors(conn, embedder, pairs)
        else:
            for seq, blob in pairs:
                insert_lesson_vector(conn, embedder, seq, blob)

    db.write(write)


def reindex(
    db: Database, progress: Callable[[int], None], target: Embedder | None = None
) -> ReindexCounts:
    """Compute the ``target`` model's vector (default: the store's model) of every experience
    and lesson that has none, then make ``target`` the store's model; ``progress(n)`` per batch.

    Each batch is its own transaction, so an interrupted reindex keeps what it wrote and a
    second run carries on; until the last vector is written the store keeps serving with its
    model. The switch is made in a transaction that finds nothing missing (work recorded
    meanwhile is embedded first); the vector generation is then bumped (open caches reload).
    """
    embedder = target or db.read(of_store)
    current, missing = db.read(lambda conn: (store_model_id(conn), _missing_in(conn, embedder)))
    if current == embedder.model_id and not (missing.experiences or missing.lessons):
        return ReindexCounts(0, 0, embedder.model_id)  # nothing to do: no write (read-only)
    embedder.load(REINDEX_BATCH)
    done = {"experience": 0, "lesson": 0}
    while True:
        for kind in done:
            for batch in _batches(db, embedder, kind):
                _store_batch(db, embedder, kind, batch)
                done[kind] += len(batch)
                progress(len(batch))

        if db.write(functools.partial(_switch, embedder=embedder, wrote=done["experience"] > 0)):
            return ReindexCounts(done["experience"], done["lesson"], embedder.model_id)


def _switch(conn: sqlite3.Connection, *, embedder: Embedder, wrote: bool) -> bool:
    """Make ``embedder`` the store's model if none of its vectors is missing (else False), and
    bump the vector generation if the model changed or experience vectors were written."""
    left = _missing_in(conn, embedder)
    if left.experiences or left.lessons:
        return False
    switched = store_model_id(conn) != embedder.model_id
    if switched:
        set_store_model(conn, embedder)
    if switched or wrote:
        conn.execute("UPDATE memory_state SET value = value + 1 WHERE key = 'vectors_generation'")
    return True


def _batches(db: Database, embedder: Embedder, kind: str) -> Iterator[list[tuple[int, str]]]:
    after = 0
    while True:
        batch = db.read(functools.partial(_missing, embedder=embedder, kind=kind, after=after))
        if not batch:
            return
        yield batch
        after = batch[-1][0]
