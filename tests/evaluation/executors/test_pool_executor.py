"""The local pool (``--jobs N``): each unit once, in worker processes, reported in the caller's
thread as it ends; a killed worker loses only its unit, recorded as lost, never retried."""

import os
import subprocess
import sys
import threading

import pytest

from lorelab.errors import UsageError
from lorelab.evaluation.executors import (
    ExecutorFailure,
    Lost,
    PoolExecutor,
    SequentialExecutor,
    TrialExecutor,
    make_executor,
)
from tests.support.conditions import write_mini
from tests.support.executor_units import die_on_three, fail_on_two, mark_started, times_ten, where


def test_the_pool_is_a_trial_executor_and_says_it_is_concurrent():
    executor: TrialExecutor = PoolExecutor(2)
    assert executor.concurrent is True
    assert executor.describe() == {"kind": "local-pool", "jobs": 2}
    assert SequentialExecutor().concurrent is False


def test_every_unit_runs_once_and_results_come_back_in_run_order():
    reported = []
    results = PoolExecutor(2).run(
        list(range(7)), times_ten, lambda unit, result: reported.append((unit, result)) or True
    )
    assert results == [0, 10, 20, 30, 40, 50, 60]
    assert sorted(reported) == [(u, u * 10) for u in range(7)]


def test_units_run_side_by_side_in_other_processes_and_done_runs_in_the_callers_thread():
    threads = set()

    def done(_unit, _result):
        threads.add(threading.current_thread())
        return True

    results = PoolExecutor(2).run([1, 2, 3, 4], where, done)
    pids = {pid for _, pid in results}
    assert os.getpid() not in pids
    assert len(pids) == 2
    assert threads == {threading.current_thread()}


def test_a_killed_worker_loses_only_its_unit_and_the_others_still_run():
    lost_units = []

    def lost(unit, found):
        lost_units.append((unit, found))
        return found

    results = PoolExecutor(2).run([1, 2, 3, 4, 5], die_on_three, lambda *_: True, lost)
    assert [unit for unit, _ in lost_units] == [3]
    reason = lost_units[0][1].reason
    assert "died" in reason
    assert "-9" in reason
    assert results[:2] == [1, 2]
    assert results[3:] == [4, 5]
    assert isinstance(results[2], Lost)


def test_a_killed_worker_without_a_lost_callback_stops_the_run():
    with pytest.raises(ExecutorFailure, match="executor-failure"):
        PoolExecutor(2).run([1, 2, 3, 4], die_on_three, lambda *_: True)


def test_an_error_in_a_unit_propagates_as_itself():
    with pytest.raises(ValueError, match="unit 2 is bad"):
        PoolExecutor(2).run([1, 2, 3], fail_on_two, lambda *_: True)


def test_no_unit_starts_after_done_refuses(tmp_path):
    units = [(str(tmp_path), n) for n in range(6)]
    results = PoolExecutor(1).run(units, mark_started, lambda unit, _r: unit[1] != 1)
    assert results == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0", "1"]


def test_make_executor_checks_its_options():
    assert isinstance(make_executor(1, "local"), SequentialExecutor)
    assert isinstance(make_executor(3, "local"), PoolExecutor)
    with pytest.raises(UsageError, match="--jobs 0"):
        make_executor(0, "local")
    with pytest.raises(UsageError, match="--ray-address needs --executor ray"):
        make_executor(2, "local", "127.0.0.1:6379")
    with pytest.raises(UsageError, match="--executor mpi"):
        make_executor(1, "mpi")


def test_a_missing_ray_is_a_usage_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)
    with pytest.raises(UsageError, match=r"pip install 'lorelab\[ray\]'"):
        make_executor(2, "ray")


HIDE_RAY = (
    "import sys; sys.modules['ray'] = None; sys.argv[0] = 'lorelab'; "
    "from lorelab.cli.main import main; main()"
)


def _without_ray(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_RAY, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_eval_learning_with_ray_missing_is_one_line_exit_2_and_writes_nothing(tmp_path):
    output = tmp_path / "out"
    done = _without_ray(
        "eval", "learning", "run", "--dataset", "default", "--agent", "fixture",
        "--output", str(output), "--executor", "ray",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert "pip install 'lorelab[ray]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not output.exists()


def test_eval_conditions_run_with_ray_missing_is_one_line_exit_2_and_writes_nothing(tmp_path):
    mini = write_mini(tmp_path)
    output = tmp_path / "out"
    done = _without_ray(
        "eval", "conditions", "run", "--manifest", str(mini["manifest"]),
        "--host", "fixture-host", "--output", str(output),
        "--home", str(tmp_path / "home"), "--executor", "ray",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert "pip install 'lorelab[ray]'" in done.stderr
    assert not output.exists()


def test_ray_address_without_ray_executor_is_refused_with_exit_2(tmp_path):
    done = _without_ray(
        "eval", "learning", "run", "--dataset", "default", "--agent", "fixture",
        "--output", str(tmp_path / "out"), "--ray-address", "127.0.0.1:6379",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--ray-address needs --executor ray" in done.stderr
