"""The bundled embedding model: WordLlama's ``l2_supercat_256`` static token embeddings.

The weights (32,000 x 256, fp16) and the tokenizer ship inside the ``wordllama`` wheel, so
nothing is downloaded at run time. WordLlama's own loader is not used (it asks Hugging Face
for the tokenizer first); the two files are read from the installed package. A text's vector
is the mean of its token vectors, L2-normalised. numpy, tokenizers and safetensors are
imported on first use only, so commands that need no vector never load them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from lorelab.errors import IntegrityFailure

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

MODEL_ID: Final = "wordllama/l2_supercat_256"
"""The model every stored vector was computed with (stored beside each vector)."""
DIMENSIONS: Final = 256
MAX_TOKENS: Final = 512
"""Tokens past this are not embedded: a task's opening says what it is about."""
_WEIGHTS: Final = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER: Final = ("tokenizers", "l2_supercat_tokenizer_config.json")


@dataclass(frozen=True, slots=True)
class Model:
    """The loaded tokenizer and token-embedding table."""

    tokenizer: Any
    table: Any
    """fp16 array, one row per token id."""

    def embed(self, texts: list[str]) -> Matrix:
        """One L2-normalised float32 row per text; a text with no tokens gives a zero row."""
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        for row, encoding in enumerate(
            self.tokenizer.encode_batch(texts, add_special_tokens=False)
        ):
            ids = encoding.ids[:MAX_TOKENS]
            if ids:
                out[row] = self.table[ids].astype(np.float32).mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        result: Matrix = out / norms
        return result


_lock = threading.Lock()
_model: Model | None = None


def model() -> Model:
    """The model, loaded once per process from the installed ``wordllama`` package."""
    global _model
    with _lock:
        if _model is None:
            _model = _load()
        return _model


def loaded() -> bool:
    """Whether this process has loaded the model (for tests of lazy loading)."""
    return _model is not None


def _load() -> Model:
    from importlib.resources import files

    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    try:
        root = files("wordllama")
        tokenizer = Tokenizer.from_file(str(root.joinpath(*_TOKENIZER)))
        table = load_file(str(root.joinpath(*_WEIGHTS)))["embedding.weight"]
    except (OSError, KeyError, ImportError, ValueError, RuntimeError) as exc:
        raise IntegrityFailure(
            f"the bundled embedding model ({MODEL_ID}) could not be loaded from the installed "
            f"wordllama package: {exc}; reinstall lorelab"
        ) from None
    if table.shape[1] != DIMENSIONS:
        raise IntegrityFailure(f"{MODEL_ID}: expected {DIMENSIONS} dimensions, got {table.shape}")
    return Model(tokenizer=tokenizer, table=table)


def embed(texts: list[str]) -> Matrix:
    """Vectors of ``texts`` (float32, L2-normalised)."""
    return model().embed(texts)


def to_blob(vector: Any) -> bytes:
    """A vector as stored: little-endian fp16 bytes."""
    import numpy as np

    return bytes(np.asarray(vector, dtype="<f2").tobytes())


def from_blobs(blobs: list[bytes]) -> Matrix:
    """Stored vectors as one float32 matrix (one row per blob)."""
    import numpy as np

    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    flat = np.frombuffer(b"".join(blobs), dtype="<f2")
    result: Matrix = flat.reshape(len(blobs), DIMENSIONS).astype(np.float32)
    return result
