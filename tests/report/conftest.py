"""Output directories to render: recorded runs (copied per test) and fresh context runs."""

from pathlib import Path

import pytest

from tests.support.report_page import EXAMPLES, copy_capture, lorelab_process


@pytest.fixture
def learning_dir(tmp_path) -> Path:
    """A copy of the recorded learning run (default dataset, fixture worker, seed 7)."""
    return copy_capture("learning", tmp_path)


@pytest.fixture
def conditions_dir(tmp_path) -> Path:
    """A copy of the recorded four-condition run of examples/conditions (fixture host)."""
    return copy_capture("conditions", tmp_path)


@pytest.fixture
def aborted_dir(tmp_path) -> Path:
    """A copy of a recorded four-condition run stopped by SIGTERM part-way."""
    return copy_capture("conditions-aborted", tmp_path)


def _run(args: list[str], output: Path, expected: int) -> Path:
    done = lorelab_process(*args, "--output", str(output))
    assert done.returncode == expected, done.stderr
    return output


@pytest.fixture(scope="module")
def context_dir(tmp_path_factory) -> Path:
    """A fresh ``lorelab eval context`` run over the example fixtures (4 of 6 FAIL: exit 1)."""
    fixtures = sorted(str(p) for p in (EXAMPLES / "context").glob("*.json"))
    return _run(["eval", "context", "run", *fixtures], tmp_path_factory.mktemp("ctx") / "out", 1)


@pytest.fixture(scope="module")
def trials_dir(tmp_path_factory) -> Path:
    """A fresh trial-mode context run (fixture-context worker) over the passing examples."""
    fixtures = sorted(str(p) for p in (EXAMPLES / "context").glob("pass-*.json"))
    args = ["eval", "context", "run", "--trials", "--agent", "fixture-context", *fixtures]
    return _run(args, tmp_path_factory.mktemp("trials") / "out", 0)


@pytest.fixture(scope="module")
def scan_dir(tmp_path_factory) -> Path:
    """A fresh scan of the example sessions (two repeated failures: exit 1)."""
    args = ["eval", "context", "scan", str(EXAMPLES / "context" / "sessions")]
    return _run(args, tmp_path_factory.mktemp("scan") / "out", 1)


@pytest.fixture
def failed_dir(tmp_path) -> Path:
    """A copy of a recorded learning run whose every trial failed for one cause (the worker
    printed no JSON)."""
    return copy_capture("learning-failed", tmp_path)


@pytest.fixture
def conditions_failed_dir(tmp_path) -> Path:
    """A copy of a recorded four-condition run whose every host call failed for one cause."""
    return copy_capture("conditions-failed", tmp_path)
