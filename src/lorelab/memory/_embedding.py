"""WordLlama's ``l2_supercat_256`` static token embeddings: the model of stores made before
MiniLM (:mod:`lorelab.memory._minilm`) became the default, and selectable for any store.

The weights (32,000 x 256, fp16) and the tokenizer ship inside the ``wordllama`` wheel, so
nothing is downloaded at run time. WordLlama's own loader is not used (it asks Hugging Face
for the tokenizer first), nor is the package imported: the two files are read from where it
is installed. A text's vector is the mean of its first 512 token vectors, L2-normalised.

Start-up cost decides the loading, since a hook embeds one prompt per process: the weights
file is memory-mapped (only the rows a text uses are read), and a few texts are tokenized by
the pure-Python reading of the same tokenizer in ``_bpe`` (tables cached on first use), while
a large batch (a reindex) uses ``tokenizers``. Both give the same ids (tested).

numpy's import alone costs a hook more than the rest of its work, so a process without numpy
does not import it for one text: a query's vector is computed in float64 in Python
(:func:`embed_query`), and a vector to store, for fewer than :data:`RUST_BATCH` texts, by
reproducing numpy's float32 arithmetic operation by operation (:func:`stored_blobs`), which
gives numpy's bytes (tested). Batches, and processes that already have numpy, use numpy.
"""

from __future__ import annotations

import json
import math
import mmap
import operator
import struct
import threading
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lorelab.errors import IntegrityFailure
from lorelab.memory import _bpe, _numpy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

MODEL_ID: Final = "wordllama/l2_supercat_256"
"""The model every stored vector was computed with (stored beside each vector)."""
DIMENSIONS: Final = 256
MAX_TOKENS: Final = 512
"""Tokens past this are not embedded: a task's opening says what it is about."""
RUST_BATCH: Final = 16
"""Batches of at least this many texts are tokenized by ``tokenizers``; smaller ones in Python."""
_WEIGHTS: Final = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER: Final = ("tokenizers", "l2_supercat_tokenizer_config.json")
_TENSOR: Final = "embedding.weight"
_HEADER_CAP: Final = 1 << 20
_ROW: Final = struct.Struct(f"<{DIMENSIONS}e")


@dataclass(frozen=True, slots=True)
class Weights:
    """The mapped weights file: ``rows`` fp16 rows of ``DIMENSIONS`` values from ``start``."""

    mapped: mmap.mmap
    start: int
    rows: int

    def row(self, token: int) -> tuple[float, ...]:
        """One token's vector, its fp16 values as Python floats (exact)."""
        if not 0 <= token < self.rows:
            raise _failure(f"token id {token} is outside the table's {self.rows} rows")
        return _ROW.unpack_from(self.mapped, self.start + token * _ROW.size)


@dataclass(slots=True)
class Model:
    """The token-embedding table and where the tokenizer is read from."""

    weights: Weights
    tokenizer_json: Path
    _table: Any = None

    @property
    def table(self) -> Any:
        """The fp16 table as a numpy array (a view of the mapped file, made on first use)."""
        if self._table is None:
            _numpy.load()
            import numpy as np

            flat = np.frombuffer(
                self.weights.mapped,
                dtype="<f2",
                count=self.weights.rows * DIMENSIONS,
                offset=self.weights.start,
            )
            self._table = flat.reshape(self.weights.rows, DIMENSIONS)
        return self._table

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The token ids of each text, without special tokens added."""
        if len(texts) >= RUST_BATCH:
            encoded = _rust_tokenizer(self.tokenizer_json).encode_batch(
                texts, add_special_tokens=False
            )
            return [list(encoding.ids) for encoding in encoded]
        tables = _python_tokenizer(self.tokenizer_json)
        return [tables.encode(text) for text in texts]

    def embed(self, texts: list[str]) -> Matrix:
        """One L2-normalised float32 row per text; a text with no tokens gives a zero row."""
        _numpy.load()
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        for row, ids in enumerate(self.token_ids(texts)):
            if ids:
                out[row] = self.table[ids[:MAX_TOKENS]].astype(np.float32).mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        result: Matrix = out / norms
        return result

    def embed_query(self, text: str) -> tuple[float, ...]:
        """The vector of one query text in float64, without numpy: the mean of its first
        ``MAX_TOKENS`` token vectors, L2-normalised (all zeros for a text with no tokens)."""
        ids = self.token_ids([text])[0][:MAX_TOKENS]
        if not ids:
            return (0.0,) * DIMENSIONS
        total = [0.0] * DIMENSIONS
        for token in ids:
            total = [a + b for a, b in zip(total, self.weights.row(token), strict=True)]
        mean = [value / len(ids) for value in total]
        norm = math.sqrt(math.fsum(value * value for value in mean))
        return tuple(value / norm for value in mean) if norm else tuple(mean)


def _f32(values: Iterable[float]) -> list[float]:
    """Each value rounded to the nearest float32 (what a float32 operation stores)."""
    return array("f", values).tolist()


def _pairwise_f32(values: list[float]) -> float:
    """numpy's pairwise summation of float32 values, in float32: under 8 values one by one;
    up to 128 in eight interleaved partial sums combined as a tree, then the remainder; above
    that, the two halves (the first a multiple of 8) summed apart and added."""
    count = len(values)
    if count < 8:
        total = 0.0
        for value in values:
            total = _f32([total + value])[0]
        return total
    if count <= 128:
        partial = values[:8]
        whole = count - count % 8
        for start in range(8, whole, 8):
            partial = _f32(a + b for a, b in zip(partial, values[start : start + 8], strict=True))
        while len(partial) > 1:  # ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
            partial = _f32(partial[i] + partial[i + 1] for i in range(0, len(partial), 2))
        total = partial[0]
        for value in values[whole:]:
            total = _f32([total + value])[0]
        return total
    half = count // 2
    half -= half % 8
    return _f32([_pairwise_f32(values[:half]) + _pairwise_f32(values[half:])])[0]


def _stored_vector_f32(weights: Weights, ids: list[int]) -> list[float]:
    """What :meth:`Model.embed` computes for one text, with its float32 arithmetic reproduced
    operation by operation: the rows summed in order from 0, divided by their count, divided by
    the square root of the pairwise sum of their squares (a zero vector stays zero)."""
    if not ids:
        return [0.0] * DIMENSIONS
    total = [0.0] * DIMENSIONS
    for token in ids:
        total = _f32(a + b for a, b in zip(total, weights.row(token), strict=True))
    mean = _f32(value / len(ids) for value in total)
    squares = _f32(value * value for value in mean)
    norm = _f32([math.sqrt(_pairwise_f32(squares))])[0] or 1.0
    return _f32(value / norm for value in mean)


def stored_blobs(texts: list[str]) -> list[bytes]:
    """The vector each text is stored with (little-endian fp16 bytes).

    A process without numpy embeds a few texts (fewer than :data:`RUST_BATCH`) by reproducing
    numpy's float32 arithmetic in Python, which gives the same bytes (tested on the held-out
    set and on adversarial texts): recording one experience from a hook does not import numpy.
    """
    if _numpy.loaded() or len(texts) >= RUST_BATCH:
        return [to_blob(vector) for vector in embed(texts)]
    loaded = model(len(texts))
    return [
        _ROW.pack(*_stored_vector_f32(loaded.weights, ids[:MAX_TOKENS]))
        for ids in loaded.token_ids(texts)
    ]


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The float64 dot product of two vectors."""
    total: float = sum(map(operator.mul, a, b))
    return total


def vector_of(blob: bytes) -> tuple[float, ...]:
    """A stored vector (little-endian fp16 bytes) as Python floats (exact)."""
    return _ROW.unpack(blob)


_lock = threading.RLock()
_model: Model | None = None
_bpe_tables: _bpe.Bpe | None = None
_rust: Any = None


def model(texts: int = 1) -> Model:
    """The model, loaded once per process from the installed ``wordllama`` package.

    ``texts`` is the size of the batch about to be embedded: the tokenizer that batch needs is
    loaded too, so that a caller can load everything before it takes a lock.
    """
    global _model
    with _lock:
        if _model is None:
            _model = _load()
        if texts >= RUST_BATCH:
            _rust_tokenizer(_model.tokenizer_json)
        else:
            _python_tokenizer(_model.tokenizer_json)
        return _model


def loaded() -> bool:
    """Whether this process has loaded the model (for tests of lazy loading)."""
    return _model is not None


def _failure(problem: object) -> IntegrityFailure:
    return IntegrityFailure(
        f"the bundled embedding model ({MODEL_ID}) could not be loaded from the installed "
        f"wordllama package: {problem}; reinstall lorelab"
    )


def _package_dir() -> Path:
    # Found without importing it: wordllama's __init__ imports requests and its inference
    # stack, which the embedding does not use.
    from importlib.util import find_spec

    spec = find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise _failure("the package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _load() -> Model:
    root = _package_dir()
    return Model(read_weights(root.joinpath(*_WEIGHTS)), root.joinpath(*_TOKENIZER))


def read_weights(path: Path) -> Weights:
    """The fp16 table of a one-tensor safetensors file, mapped (rows are read on demand).

    The format is an 8-byte little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte offsets, then the raw data; anything else than one ``F16`` tensor of
    ``DIMENSIONS`` columns whose offsets fit the file is refused.
    """
    try:
        with path.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        raise _failure(f"{path.name}: {exc}") from None
    size = len(mapped)
    length = int.from_bytes(mapped[:8], "little") if size >= 8 else -1
    if not 0 < length <= min(_HEADER_CAP, size - 8):
        raise _failure(f"{path.name}: no safetensors header")
    try:
        header = json.loads(mapped[8 : 8 + length])
        entry = header[_TENSOR]
        dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
    except (ValueError, KeyError, TypeError) as exc:
        raise _failure(f"{path.name}: unreadable header ({exc!r})") from None
    rows = shape[0] if isinstance(shape, list) and len(shape) == 2 else None
    if dtype != "F16" or not isinstance(rows, int) or shape[1] != DIMENSIONS:
        raise _failure(
            f"{MODEL_ID}: expected F16 rows of {DIMENSIONS} dimensions, got {dtype} {shape}"
        )
    start = 8 + length + begin
    if begin < 0 or end - begin != rows * DIMENSIONS * 2 or 8 + length + end > size:
        raise _failure(f"{path.name}: data offsets {[begin, end]} do not fit shape {shape}")
    return Weights(mapped, start, rows)


def _python_tokenizer(path: Path) -> _bpe.Bpe:
    global _bpe_tables
    with _lock:
        if _bpe_tables is None:
            try:
                _bpe_tables = _bpe.load(path)
            except (OSError, ValueError) as exc:
                raise _failure(exc) from None
        return _bpe_tables


def _rust_tokenizer(path: Path) -> Any:
    global _rust
    with _lock:
        if _rust is None:
            try:
                from tokenizers import Tokenizer

                _rust = Tokenizer.from_file(str(path))
            except (OSError, ImportError, ValueError, RuntimeError) as exc:
                raise _failure(exc) from None
        return _rust


def embed(texts: list[str]) -> Matrix:
    """Vectors of ``texts`` (float32, L2-normalised)."""
    return model().embed(texts)


def embed_query(text: str) -> tuple[float, ...]:
    """The vector of one query text, in float64, without numpy (see :meth:`Model.embed_query`)."""
    return model().embed_query(text)


def to_blob(vector: Any) -> bytes:
    """A vector as stored: little-endian fp16 bytes."""
    _numpy.load()
    import numpy as np

    return bytes(np.asarray(vector, dtype="<f2").tobytes())


def from_blobs(blobs: list[bytes]) -> Matrix:
    """Stored vectors as one float32 matrix (one row per blob)."""
    _numpy.load()
    import numpy as np

    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    flat = np.frombuffer(b"".join(blobs), dtype="<f2")
    result: Matrix = flat.reshape(len(blobs), DIMENSIONS).astype(np.float32)
    return result
