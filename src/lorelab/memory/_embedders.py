"""The embedding models a store can use, behind one small interface, and the store's choice.

Two models are bundled: ``minilm`` (all-MiniLM-L6-v2, int8 ONNX: the default for a new store)
and ``wordllama`` (WordLlama's static token embeddings, the model of every store made before
MiniLM was bundled). A store records the one its vectors are computed with (the
``store_settings`` row ``embedding_model``); retrieval scans only that model's vectors and
embeds the task with it, so models are never mixed in one scan. ``lorelab memory reindex
--model NAME`` computes the other model's vectors and switches the store once all are there.

A new store takes ``$LORELAB_EMBEDDING_MODEL`` (``minilm`` or ``wordllama``) if set, else
``minilm``; the variable never changes an existing store.
"""

from __future__ import annotations

import operator
import os
import sqlite3
import struct
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from lorelab.errors import IntegrityFailure, UsageError
from lorelab.memory import _embedding, _minilm, _numpy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

ENVIRONMENT: Final = "LORELAB_EMBEDDING_MODEL"
DEFAULT_NAME: Final = "minilm"
SETTING: Final = "embedding_model"
_PROJECTION_SEED: Final = 20261203


class Embedder(ABC):
    """One embedding model: its id, its size, and how texts become stored and query vectors.

    Stored vectors are little-endian fp16 blobs of ``dimensions`` values; a query vector is a
    tuple of floats. ``coarse`` maps full vectors to the short float32 rows a large store's
    first scan stage compares (:mod:`lorelab.memory._vectors`).
    """

    name: str
    model_id: str
    dimensions: int
    coarse_dims: int

    def __init__(self) -> None:
        self._row = struct.Struct(f"<{self.dimensions}e")

    @abstractmethod
    def load(self, texts: int = 1) -> None:
        """Load the model (and what a batch of ``texts`` needs) before taking a lock."""

    @abstractmethod
    def embed(self, texts: list[str]) -> Matrix:
        """One L2-normalised float32 row per text."""

    @abstractmethod
    def embed_query(self, text: str) -> Sequence[float]:
        """The query's vector as Python floats."""

    def stored_blobs(self, texts: list[str]) -> list[bytes]:
        """The vector each text is stored with (little-endian fp16 bytes)."""
        return [to_blob(vector) for vector in self.embed(texts)]

    def vector_of(self, blob: bytes) -> tuple[float, ...]:
        """A stored vector as Python floats (exact)."""
        return self._row.unpack(blob)

    def from_blobs(self, blobs: list[bytes]) -> Matrix:
        """Stored vectors as one float32 matrix (one row per blob)."""
        _numpy.load()
        import numpy as np

        if not blobs:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        flat = np.frombuffer(b"".join(blobs), dtype="<f2")
        result: Matrix = flat.reshape(len(blobs), self.dimensions).astype(np.float32)
        return result

    @abstractmethod
    def coarse(self, vectors: Any) -> Any:
        """The first scan stage's float32 rows of ``vectors`` (a 2-d array), renormalised."""


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The float64 dot product of two vectors."""
    total: float = sum(map(operator.mul, a, b))
    return total


def to_blob(vector: Any) -> bytes:
    """A vector as stored: little-endian fp16 bytes."""
    return _embedding.to_blob(vector)


def _normalised(rows: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms


class WordLlama(Embedder):
    """WordLlama ``l2_supercat_256`` (:mod:`lorelab.memory._embedding`): no numpy for a few
    texts, and Matryoshka-trained, so a vector's first 64 values are its coarse row."""

    name = "wordllama"
    model_id = _embedding.MODEL_ID
    dimensions = _embedding.DIMENSIONS
    coarse_dims = 64

    def load(self, texts: int = 1) -> None:
        _embedding.model(texts)

    def embed(self, texts: list[str]) -> Matrix:
        return _embedding.embed(texts)

    def embed_query(self, text: str) -> Sequence[float]:
        return _embedding.embed_query(text)

    def stored_blobs(self, texts: list[str]) -> list[bytes]:
        return _embedding.stored_blobs(texts)

    def coarse(self, vectors: Any) -> Any:
        _numpy.load()
        import numpy as np

        return _normalised(np.ascontiguousarray(vectors[:, : self.coarse_dims], dtype=np.float32))


class MiniLM(Embedder):
    """all-MiniLM-L6-v2 (:mod:`lorelab.memory._minilm`). Its dimensions are not ordered by
    importance, so its coarse row is a fixed random orthonormal projection to 96 values
    (seeded: every process projects alike), which keeps cosines close enough to shortlist."""

    name = _minilm.NAME
    model_id = _minilm.MODEL_ID
    dimensions = _minilm.DIMENSIONS
    coarse_dims = 96

    def __init__(self) -> None:
        super().__init__()
        self._projection: Any = None

    def load(self, texts: int = 1) -> None:
        _minilm.model()

    def embed(self, texts: list[str]) -> Matrix:
        return _minilm.embed(texts)

    def embed_query(self, text: str) -> Sequence[float]:
        return _minilm.embed_query(text)

    def coarse(self, vectors: Any) -> Any:
        _numpy.load()
        import numpy as np

        if self._projection is None:
            gaussian = np.random.default_rng(_PROJECTION_SEED).standard_normal(
                (self.dimensions, self.coarse_dims)
            )
            self._projection = np.linalg.qr(gaussian)[0].astype(np.float32)
        projected = np.asarray(vectors, dtype=np.float32) @ self._projection
        return _normalised(np.ascontiguousarray(projected, dtype=np.float32))


MINILM: Final = MiniLM()
WORDLLAMA: Final = WordLlama()
EMBEDDERS: Final[dict[str, Embedder]] = {MINILM.name: MINILM, WORDLLAMA.name: WORDLLAMA}
_BY_ID: Final = {embedder.model_id: embedder for embedder in EMBEDDERS.values()}


def named(name: str, source: str = "embedding model") -> Embedder:
    """The bundled model called ``name``; a UsageError naming ``source`` otherwise."""
    found = EMBEDDERS.get(name.strip().lower())
    if found is None:
        raise UsageError(f"{source} {name!r}: not a bundled model (choose {', '.join(EMBEDDERS)})")
    return found


def default_for_new_store() -> Embedder:
    """The model a new store is made with: ``$LORELAB_EMBEDDING_MODEL``, else MiniLM."""
    chosen = os.environ.get(ENVIRONMENT)
    if chosen is None or not chosen.strip():
        return EMBEDDERS[DEFAULT_NAME]
    return named(chosen, f"${ENVIRONMENT}")


def store_model_id(conn: sqlite3.Connection) -> str | None:
    """The model id the store records (None: it records none)."""
    found = conn.execute("SELECT value FROM store_settings WHERE key = ?", (SETTING,)).fetchone()
    return None if found is None else str(found[0])


def of_store(conn: sqlite3.Connection) -> Embedder:
    """The model the store's vectors are computed with (its ``embedding_model`` setting)."""
    model_id = store_model_id(conn)
    embedder = _BY_ID.get(model_id or "")
    if embedder is None:
        raise IntegrityFailure(
            f"the memory store's vectors are of the embedding model {model_id!r}, which this "
            f"lorelab does not bundle; run `lorelab memory reindex --model {DEFAULT_NAME}`"
        )
    return embedder


def set_store_model(conn: sqlite3.Connection, embedder: Embedder) -> None:
    """Record ``embedder`` as the store's model (in the caller's transaction)."""
    conn.execute(
        "INSERT INTO store_settings (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (SETTING, embedder.model_id),
    )
