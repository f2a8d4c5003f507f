"""The learning evaluation: paired memory vs no-memory test generation, scored by planted-defect
recall. This package holds its manifest (models, schema, rules) and its shipped datasets."""

from lorelab.evaluation.learning.datasets import DATASET_NAMES, get_dataset
from lorelab.evaluation.learning.manifest import (
    MAX_DEFECTS,
    MAX_HISTORY,
    MAX_SPECIFICATIONS,
    Defect,
    Fixture,
    HistoryEntry,
    LearningManifest,
    declared_cases,
    find_violations,
    load_manifest,
    manifest_schema,
    validate_manifest,
)

__all__ = [
    "DATASET_NAMES",
    "MAX_DEFECTS",
    "MAX_HISTORY",
    "MAX_SPECIFICATIONS",
    "Defect",
    "Fixture",
    "HistoryEntry",
    "LearningManifest",
    "declared_cases",
    "find_violations",
    "get_dataset",
    "load_manifest",
    "manifest_schema",
    "validate_manifest",
]
