"""Each evaluation package exports exactly what other packages import, named in ``__all__``."""

import importlib
import types

import pytest

PACKAGES = {
    "lorelab.evaluation.conditions": {
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
        "load_profile",
        "manifest_schema",
        "print_report",
        "profile_schema",
        "profile_summary",
        "read_runs",
        "run_conditions",
        "write_leaderboard",
    },
    "lorelab.evaluation.learning": {
        "DATASET_NAMES",
        "DATASET_SETS",
        "get_dataset",
        "get_set",
        "manifest_schema",
    },
    "lorelab.evaluation.executors": {
        "EXECUTORS",
        "EXECUTOR_FAILURE",
        "ExecutorFailure",
        "Lost",
        "PoolExecutor",
        "SequentialExecutor",
        "TrialExecutor",
        "make_executor",
        "worker_location",
    },
    "lorelab.testgen": {
        "DEFAULT_K",
        "DEFAULT_LEARN_RUNS",
        "CallSettings",
        "CandidateValidation",
        "GenerateOptions",
        "GenerateResult",
        "Generation",
        "GenerationTask",
        "HistoricalExample",
        "LearnResult",
        "Recall",
        "RunnerName",
        "detect_runner",
        "generate",
        "generate_for_project",
        "learn",
        "lesson_request",
        "read_example",
        "read_project",
        "recall_lessons",
        "select_sources",
        "validate_candidates",
        "validate_example",
    },
}


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_all_names_exactly_the_public_names_of_the_package(name):
    module = importlib.import_module(name)
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(module.__all__) == PACKAGES[name]
    assert public == set(module.__all__)
    for attr in module.__all__:
        assert hasattr(module, attr)
