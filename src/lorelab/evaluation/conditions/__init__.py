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
from lorelab.evaluation.conditions._finalize import (
    FINALIZE_FILE,
    FinalizeSummary,
    finalize_conditions,
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
from lorelab.evaluation.conditions._memory import (
    LORELAB_PROFILE,
    MEMCODER_PROFILE,
    PROFILES,
    MemoryProfile,
)
from lorelab.evaluation.conditions._relevance import estimate_tokens, is_relevant, relevance_keys
from lorelab.evaluation.conditions._render import print_report
from lorelab.evaluation.conditions._runner import (
    RUNS_FILE,
    RunOptions,
    RunSummary,
    SeedMemory,
    lock_tasks,
    run_conditions,
)
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
    "FINALIZE_FILE",
    "LORELAB_PROFILE",
    "MEMCODER_PROFILE",
    "MEMORY_CONDITIONS",
    "MIN_HOLDOUTS",
    "PROFILES",
    "RUNS_FILE",
    "ConditionsManifest",
    "ConditionsReport",
    "Decision",
    "FinalizeSummary",
    "LoadedRuns",
    "MemoryProfile",
    "PairedComparison",
    "RunOptions",
    "RunRecord",
    "RunSummary",
    "RunsFile",
    "SeedMemory",
    "TaskSpec",
    "Thresholds",
    "check_manifest",
    "check_runs",
    "decide",
    "estimate_tokens",
    "evaluate",
    "evaluate_file",
    "finalize_conditions",
    "is_polluted",
    "is_relevant",
    "load_manifest",
    "lock_tasks",
    "manifest_schema",
    "parse_runs",
    "print_report",
    "project_dir",
    "read_runs",
    "relevance_keys",
    "resolve_holdouts",
    "run_conditions",
]
