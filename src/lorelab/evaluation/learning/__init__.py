"""The learning evaluation: paired memory vs no-memory test generation, scored by planted-defect
recall. Its manifest, controller, records and summary are the public modules of this package;
the package itself exports what the command line needs."""

from lorelab.evaluation.learning.datasets import DATASET_NAMES, DATASET_SETS, get_dataset, get_set
from lorelab.evaluation.learning.manifest import manifest_schema

__all__ = ["DATASET_NAMES", "DATASET_SETS", "get_dataset", "get_set", "manifest_schema"]
