"""The learning evaluation's shipped datasets, kept as data files in this package (one directory
each, read with :mod:`importlib.resources`; the layout is described in ``_files``). All use the
pytest runner and pass :func:`validate_manifest`.

A *set* is several shipped datasets run as one campaign (one ``lorelab eval learning run`` each,
then ``pool``): the set ``NAME`` is the dataset ``NAME`` and every dataset ``NAME-<project>``,
so a dataset added under such a name joins its set with no other change."""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from pydantic import Field

from lorelab._model import RecordModel
from lorelab.errors import SchemaError, UsageError
from lorelab.evaluation.learning._preparation import manifest_digest
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


# Each set, with the project of its dataset named as the set; every other member
# ``NAME-<project>`` names its project after the set's name and a hyphen.
DATASET_SETS: Final = {"evolution": "cpython"}


class SetManifest(RecordModel):
    """One manifest of a set, as ``export-dataset NAME --set`` lists it."""

    dataset: str = Field(description="The shipped dataset's name (for --dataset).")
    id: str = Field(description="The manifest's id, as run receipts record it.")
    project: str = Field(description="The project its code comes from.")
    sha256: str = Field(description="SHA-256 of its canonical JSON, as manifestSha256 records it.")
    specification_ids: list[str] = Field(description="Its specifications' ids, in order.")


class DatasetSet(RecordModel):
    """A set of shipped datasets, run as one campaign and pooled."""

    name: str = Field(description="The set's name.")
    specifications: int = Field(description="Specifications over every manifest of the set.")
    projects: int = Field(description="Distinct projects over every manifest of the set.")
    manifests: list[SetManifest]


def set_members(name: str) -> tuple[str, ...]:
    """The shipped datasets of the set ``name``, in :data:`DATASET_NAMES` order; a name that is
    not a set is a :class:`UsageError`."""
    if name not in DATASET_SETS:
        raise UsageError(f"set {name!r}: unknown; choose one of {', '.join(DATASET_SETS)}")
    return tuple(n for n in DATASET_NAMES if n == name or n.startswith(f"{name}-"))


def get_set(name: str) -> DatasetSet:
    """The set ``name``: each member manifest with its id, project, hash and specification ids,
    and the totals. A specification id in two members is a :class:`SchemaError` (the runs of
    the set could not be pooled)."""
    manifests: list[SetManifest] = []
    seen: dict[str, str] = {}
    for dataset in set_members(name):
        manifest = get_dataset(dataset)
        ids = [fixture.id for fixture in manifest.fixtures]
        for spec in ids:
            if spec in seen:
                raise SchemaError(
                    f"set {name!r}: specification {spec!r} is in both {seen[spec]!r} "
                    f"and {dataset!r}"
                )
            seen[spec] = dataset
        manifests.append(
            SetManifest(
                dataset=dataset,
                id=manifest.id,
                project=DATASET_SETS[name] if dataset == name else dataset[len(name) + 1 :],
                sha256=manifest_digest(manifest),
                specification_ids=ids,
            )
        )
    return DatasetSet(
        name=name,
        specifications=len(seen),
        projects=len({m.project for m in manifests}),
        manifests=manifests,
    )


__all__ = [
    "DATASET_NAMES",
    "DATASET_SETS",
    "DatasetSet",
    "SetManifest",
    "get_dataset",
    "get_set",
    "set_members",
]
