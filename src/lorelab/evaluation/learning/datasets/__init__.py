"""The learning evaluation's shipped datasets, authored for lorelab in Python: ``default`` and
``qualification``. Both use the pytest runner and pass :func:`validate_manifest`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from lorelab.errors import UsageError
from lorelab.evaluation.learning.datasets import _default, _qualification
from lorelab.evaluation.learning.manifest import LearningManifest, validate_manifest

_BUILDERS: Final[dict[str, Callable[[], LearningManifest]]] = {
    "default": _default.build,
    "qualification": _qualification.build,
}
DATASET_NAMES: Final = tuple(_BUILDERS)


def get_dataset(name: str) -> LearningManifest:
    """The shipped dataset ``name``, validated; an unknown name is a :class:`UsageError`."""
    builder = _BUILDERS.get(name)
    if builder is None:
        raise UsageError(f"dataset {name!r}: unknown; choose one of {', '.join(DATASET_NAMES)}")
    manifest = builder()
    validate_manifest(manifest, f"dataset {name!r}")
    return manifest


__all__ = ["DATASET_NAMES", "get_dataset"]
