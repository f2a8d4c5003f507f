"""Test runners behind one interface (pytest, node --test), executions, stability, detection.

Importing this package is kept cheap on purpose: pytest imports it in every test process it
starts (the runner's plugin lives here), so the public names below are loaded on first use.
The process supervisor they run on lives in :mod:`lorelab.io`; ``run_process`` and
``ProcessScope`` are re-exported here because every caller that runs tests uses them.
"""

from __future__ import annotations

import typing

from lorelab._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from lorelab.io._process import run_process
    from lorelab.io._scope import ExecutionCancelled, ProcessScope
    from lorelab.runners._check import (
        SuiteCheck,
        check_suite,
    )
    from lorelab.runners._models import (
        Case,
        DefectOutcome,
        Execution,
        Stability,
    )
    from lorelab.runners._node import (
        NodeRunner,
    )
    from lorelab.runners._pool import (
        ExecutionJob,
        StabilityJob,
        run_parallel,
    )
    from lorelab.runners._pytest import (
        PytestRunner,
    )
    from lorelab.runners._select import (
        detect_runner,
        get_runner,
        is_test_file,
    )
    from lorelab.runners._stability import (
        assess,
        detect,
        is_valid_baseline,
        run_stability,
    )

_WHERE = {
    "ExecutionCancelled": "lorelab.io._scope",
    "ProcessScope": "lorelab.io._scope",
    "run_process": "lorelab.io._process",
    "SuiteCheck": "lorelab.runners._check",
    "check_suite": "lorelab.runners._check",
    "Case": "lorelab.runners._models",
    "DefectOutcome": "lorelab.runners._models",
    "Execution": "lorelab.runners._models",
    "Stability": "lorelab.runners._models",
    "NodeRunner": "lorelab.runners._node",
    "ExecutionJob": "lorelab.runners._pool",
    "StabilityJob": "lorelab.runners._pool",
    "run_parallel": "lorelab.runners._pool",
    "PytestRunner": "lorelab.runners._pytest",
    "detect_runner": "lorelab.runners._select",
    "get_runner": "lorelab.runners._select",
    "is_test_file": "lorelab.runners._select",
    "assess": "lorelab.runners._stability",
    "detect": "lorelab.runners._stability",
    "is_valid_baseline": "lorelab.runners._stability",
    "run_stability": "lorelab.runners._stability",
}

__all__ = [
    "Case",
    "DefectOutcome",
    "Execution",
    "ExecutionCancelled",
    "ExecutionJob",
    "NodeRunner",
    "ProcessScope",
    "PytestRunner",
    "Stability",
    "StabilityJob",
    "SuiteCheck",
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


__getattr__, __dir__ = _lazy_exports(__name__, globals(), _WHERE)
