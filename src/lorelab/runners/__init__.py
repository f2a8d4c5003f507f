"""Test runners behind one interface (pytest, node --test), executions, stability, detection.

Importing this package is kept cheap on purpose: pytest imports it in every test process it
starts (the runner's plugin lives here), so the public names below are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lorelab.runners._base import TestRunner
    from lorelab.runners._check import RunSummary, SuiteCheck, SuiteReport, check_suite
    from lorelab.runners._models import (
        Case,
        CaseStatus,
        Classification,
        DefectOutcome,
        DefectStatus,
        Execution,
        FailureKind,
        ProcessRecord,
        RunnerName,
        Stability,
    )
    from lorelab.runners._node import NodeRunner
    from lorelab.runners._pool import ExecutionJob, StabilityJob, run_parallel
    from lorelab.runners._process import (
        ExecutionCancelled,
        ProcessResult,
        ProcessScope,
        run_process,
    )
    from lorelab.runners._pytest import PytestRunner
    from lorelab.runners._select import detect_runner, get_runner, is_test_file
    from lorelab.runners._stability import assess, detect, is_valid_baseline, run_stability

_WHERE = {
    "RunSummary": "_check",
    "SuiteCheck": "_check",
    "SuiteReport": "_check",
    "check_suite": "_check",
    "TestRunner": "_base",
    "Case": "_models",
    "CaseStatus": "_models",
    "Classification": "_models",
    "DefectOutcome": "_models",
    "DefectStatus": "_models",
    "Execution": "_models",
    "FailureKind": "_models",
    "ProcessRecord": "_models",
    "RunnerName": "_models",
    "Stability": "_models",
    "NodeRunner": "_node",
    "ExecutionJob": "_pool",
    "StabilityJob": "_pool",
    "run_parallel": "_pool",
    "ExecutionCancelled": "_process",
    "ProcessResult": "_process",
    "ProcessScope": "_process",
    "run_process": "_process",
    "PytestRunner": "_pytest",
    "detect_runner": "_select",
    "get_runner": "_select",
    "is_test_file": "_select",
    "assess": "_stability",
    "detect": "_stability",
    "is_valid_baseline": "_stability",
    "run_stability": "_stability",
}

__all__ = [
    "Case",
    "CaseStatus",
    "Classification",
    "DefectOutcome",
    "DefectStatus",
    "Execution",
    "ExecutionCancelled",
    "ExecutionJob",
    "FailureKind",
    "NodeRunner",
    "ProcessRecord",
    "ProcessResult",
    "ProcessScope",
    "PytestRunner",
    "RunSummary",
    "RunnerName",
    "Stability",
    "StabilityJob",
    "SuiteCheck",
    "SuiteReport",
    "TestRunner",
    "assess",
    "check_suite",
    "detect",
    "detect_runner",
    "get_runner",
    "is_test_file",
    "is_valid_baseline",
    "run_parallel",
    "run_process",
    "run_stability",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
