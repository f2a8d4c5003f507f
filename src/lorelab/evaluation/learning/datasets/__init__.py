"""The learning evaluation's shipped datasets, kept as data files in this package (one directory
each, read with :mod:`importlib.resources`; the layout is described in ``_files``). All use the
pytest runner and pass :func:`validate_manifest`."""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from lorelab.errors import UsageError
from lorelab.evaluation.learning.datasets._files import load_dataset
from lorelab.evaluation.learning.manifest import LearningManifest, validate_manifest

DATASET_NAMES: Final = (
    "default",
    "qualification",
    "qualification-12",
    "stdlib",
    "evolution",
    "evolution-more-itertools",
    "evolution-boltons",
)


def get_dataset(name: str) -> LearningManifest:
    """The shipped dataset ``name``, validated; an unknown name is a :class:`UsageError`."""
    if name not in DATASET_NAMES:
        raise UsageError(f"dataset {name!r}: unknown; choose one of {', '.join(DATASET_NAMES)}")
    manifest = load_dataset(files(__name__), name)
    validate_manifest(manifest, f"dataset {name!r}")
    return manifest


__all__ = ["DATASET_NAMES", "get_dataset"]
