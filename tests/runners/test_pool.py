import os
import signal
import sys
import threading
import time

import pytest

from lorelab.errors import InputFileError, UsageError
from lorelab.runners import (
    ExecutionCancelled,
    ExecutionJob,
    NodeRunner,
    ProcessScope,
    PytestRunner,
    StabilityJob,
    run_parallel,
    run_process,
)

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


def _wait_for_files(paths, within_s=60.0):
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if all(path.exists() and path.read_text() for path in paths):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.timeout(90)
def test_an_interrupt_kills_running_jobs_at_once_instead_of_waiting_for_their_timeouts(
    make, tmp_path, gone
):
    # Each suite records its pid and spins; the jobs' own timeout (1 hour) never comes, so
    # only a kill on interrupt lets run_parallel return (pytest-timeout fails it otherwise).
    pid_files = [tmp_path / f"pid-{number}" for number in range(2)]
    projects = [
        make(
            f"spin{number}",
            {
                # The spin ends by itself after two minutes (past pytest-timeout's 90 s), so a
                # regression fails this test without leaving busy processes behind.
                "tests/test_spin.py": (
                    "import os, time\n\n"
                    "def test_spin():\n"
                    f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                    "    end = time.monotonic() + 120\n"
                    "    while time.monotonic() < end:\n"
                    "        pass\n"
                )
            },
        )
        for number, pid_file in enumerate(pid_files)
    ]
    jobs = [StabilityJob(runner=RUNNER, project=p, runs=3, timeout_s=3600) for p in projects]

    def interrupt_when_running():
        if _wait_for_files(pid_files):
            # A real signal, as Ctrl-C sends: it wakes the main thread's blocking wait.
            os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=interrupt_when_running, daemon=True)
    watcher.start()
    with pytest.raises(KeyboardInterrupt):
        run_parallel(jobs, max_workers=2)
    watcher.join(timeout=5)
    pids = [int(path.read_text()) for path in pid_files]
    assert all(gone(pid) for pid in pids)
    # No job went on to its next stability run after the interrupt.
    assert [int(path.read_text()) for path in pid_files] == pids


def test_a_cancelled_scope_starts_no_process_and_returns_no_result(tmp_path):
    marker = tmp_path / "started"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')"]
    with ProcessScope() as scope:
        run_process(argv, cwd=tmp_path, env={}, timeout_s=30)
        assert marker.exists()
        marker.unlink()
        scope.cancel()
        with pytest.raises(ExecutionCancelled):
            run_process(argv, cwd=tmp_path, env={}, timeout_s=30)
    assert not marker.exists()


def test_leaving_a_scope_by_an_exception_kills_what_other_threads_started(tmp_path, gone):
    pid_file = tmp_path / "pid"
    argv = [
        sys.executable,
        "-c",
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)",
    ]
    outcome: list[object] = []

    def call():
        try:
            outcome.append(run_process(argv, cwd=tmp_path, env={}, timeout_s=600))
        except ExecutionCancelled as exc:
            outcome.append(exc)

    scope = ProcessScope()
    thread = threading.Thread(target=scope.bind(call))

    def start_then_fail():
        with scope:
            thread.start()
            assert _wait_for_files([pid_file])
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        start_then_fail()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert gone(int(pid_file.read_text()))
    assert len(outcome) == 1
    assert isinstance(outcome[0], ExecutionCancelled)
