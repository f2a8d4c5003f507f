"""The four-condition protocol: manifest, runs file, ``lorelab evaluate`` and the runner."""

from lorelab.evaluation.conditions._evaluate import (
    CANNOT_PROVE,
    ConditionsReport,
    Decision,
    PairedComparison,
    decide,
    evaluate,
    evaluate_file,
    is_polluted,
    resolve_holdouts,
)
from lorelab.evaluation.conditions._manifest import (
    CONDITIONS,
    MEMORY_CONDITIONS,
    MIN_HOLDOUTS,
    ConditionsManifest,
    TaskSpec,
    Thresholds,
    check_manifest,
    load_manifest,
    manifest_schema,
    project_dir,
)
from lorelab.evaluation.conditions._render import print_report
from lorelab.evaluation.conditions._runs import (
    LoadedRuns,
    RunRecord,
    RunsFile,
    check_runs,
    parse_runs,
    read_runs,
)

__all__ = [
    "CANNOT_PROVE",
    "CONDITIONS",
    "MEMORY_CONDITIONS",
    "MIN_HOLDOUTS",
    "ConditionsManifest",
    "ConditionsReport",
    "Decision",
    "LoadedRuns",
    "PairedComparison",
    "RunRecord",
    "RunsFile",
    "TaskSpec",
    "Thresholds",
    "check_manifest",
    "check_runs",
    "decide",
    "evaluate",
    "evaluate_file",
    "is_polluted",
    "load_manifest",
    "manifest_schema",
    "parse_runs",
    "print_report",
    "project_dir",
    "read_runs",
    "resolve_holdouts",
]
