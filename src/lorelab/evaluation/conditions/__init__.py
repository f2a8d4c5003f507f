"""The four-condition protocol: manifest, runs file, ``lorelab eval conditions decide`` and
the runner."""

from lorelab.evaluation.conditions._evaluate import evaluate, evaluate_file
from lorelab.evaluation.conditions._finalize import finalize_conditions
from lorelab.evaluation.conditions._manifest import manifest_schema
from lorelab.evaluation.conditions._receipts import (
    DreamReceipt,
    ManifestReceipt,
    PreflightReceipt,
    RunAborted,
    RunFinished,
    RunReceipt,
)
from lorelab.evaluation.conditions._render import print_report
from lorelab.evaluation.conditions._report import ConditionsReport
from lorelab.evaluation.conditions._runner import RunOptions, RunSummary, run_conditions
from lorelab.evaluation.conditions._runs import RUNS_FILE, read_runs

__all__ = [
    "RUNS_FILE",
    "ConditionsReport",
    "DreamReceipt",
    "ManifestReceipt",
    "PreflightReceipt",
    "RunAborted",
    "RunFinished",
    "RunOptions",
    "RunReceipt",
    "RunSummary",
    "evaluate",
    "evaluate_file",
    "finalize_conditions",
    "manifest_schema",
    "print_report",
    "read_runs",
    "run_conditions",
]
