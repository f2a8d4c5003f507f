import pytest

from lorelab.errors import InputFileError, UsageError
from lorelab.runners import ExecutionJob, NodeRunner, PytestRunner, StabilityJob, run_parallel

RUNNER = PytestRunner(plugin_autoload=False)
SUITES = {
    "passing": {"tests/test_a.py": "def test_a():\n    assert True is True\n"},
    "failing": {"tests/test_a.py": "def test_a():\n    assert 1 == 2\n\ndef test_b():\n    pass\n"},
    "broken": {"tests/test_a.py": "import missing_module_xyz\n\ndef test_a():\n    pass\n"},
    "node": {"test/a.test.js": "require('node:test')('a', () => {});\n"},
}


def _summary(execution):
    return (
        execution.runner,
        execution.classification,
        execution.exit_code,
        [(case.id, case.status) for case in execution.cases],
    )


def test_parallel_results_come_in_input_order_and_equal_serial_results(make):
    projects = {name: make(name, files) for name, files in SUITES.items()}
    jobs = [
        ExecutionJob(runner=NodeRunner() if name == "node" else RUNNER, project=path, timeout_s=60)
        for name, path in projects.items()
    ]
    parallel = run_parallel(jobs, max_workers=2)
    serial = run_parallel(jobs, max_workers=1)
    assert [_summary(e) for e in parallel] == [_summary(e) for e in serial]
    assert [e.classification for e in parallel] == [
        "passed",
        "failed",
        "collection-error",
        "passed",
    ]


def test_two_jobs_in_one_directory_are_refused_before_anything_runs(make):
    project = make("p", SUITES["passing"])
    jobs = [
        ExecutionJob(runner=RUNNER, project=project, timeout_s=60),
        StabilityJob(runner=RUNNER, project=project / ".." / "p", runs=2, timeout_s=60),
    ]
    with pytest.raises(UsageError, match="share a directory"):
        run_parallel(jobs)


def test_a_job_inside_another_jobs_directory_is_refused(make):
    project = make("p", {**SUITES["passing"], "inner/tests/test_b.py": "def test_b():\n    pass\n"})
    jobs = [
        ExecutionJob(runner=RUNNER, project=project, timeout_s=60),
        ExecutionJob(runner=RUNNER, project=project / "inner", timeout_s=60),
    ]
    with pytest.raises(UsageError, match="share a directory"):
        run_parallel(jobs)


@pytest.mark.parametrize("workers", [0, -1, 1000, 1.5, True])
def test_an_unusable_pool_size_is_refused(workers):
    with pytest.raises(UsageError, match="max_workers"):
        run_parallel([], max_workers=workers)


def test_bad_jobs_are_refused_before_any_job_runs(make, tmp_path):
    good = make("p", SUITES["passing"])
    with pytest.raises(InputFileError, match="no such directory"):
        run_parallel(
            [
                ExecutionJob(runner=RUNNER, project=good, timeout_s=60),
                ExecutionJob(runner=RUNNER, project=tmp_path / "missing", timeout_s=60),
            ]
        )
    with pytest.raises(UsageError, match="stability runs"):
        run_parallel([StabilityJob(runner=RUNNER, project=good, runs=6, timeout_s=60)])


def test_no_jobs_give_no_results():
    assert run_parallel([]) == []
