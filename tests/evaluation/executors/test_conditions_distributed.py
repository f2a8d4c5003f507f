"""``lorelab eval conditions run --jobs 2`` and ``--executor ray`` on the mini project (10 tasks,
4 conditions, lorelab's own memory over MCP), against a sequential run of the same input:

* the runs file and the decision are identical whichever executor ran the runs;
* a worker process killed in the middle of a run leaves that run as ``executor-failure``
  (never retried, left out of the comparisons) and every other run complete;
* a coordinator stopped with SIGTERM leaves aborted.json, and ``finalize`` clears the lock;
* a Ray node whose lorelab files hash differently fails every host call there as
  ``identity-changed``, recorded, while the other node's runs complete.

Every run is some 40 task x condition runs with real processes, hence ``slow``.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lorelab.evaluation.conditions import evaluate_file
from tests.support.conditions import write_mini
from tests.support.ray_cluster import RAY_ENV

pytestmark = pytest.mark.slow

TIMEOUT_S = 900
KILLER = Path(__file__).resolve().parent / "data" / "killer_host.py"
SOLVE_SEED = {"summary": "SOLVE: write the task's marker under done/"}


def _run(base: Path, name: str, *extra: str, host: str = "fixture-host", env=None):
    mini = base / "input"
    if not mini.exists():
        mini.mkdir()
        write_mini(mini)
        (mini / "seed.json").write_text(json.dumps(_seed()))
    output = base / name
    done = subprocess.run(
        [
            sys.executable, "-m", "lorelab", "eval", "conditions", "run",
            "--manifest", str(mini / "conditions.json"), "--host", host,
            "--output", str(output), "--home", str(base / f"{name}-home"),
            "--seed-memory", str(mini / "seed.json"), "--json", *extra,
        ],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        env={**os.environ, **RAY_ENV, **(env or {})},
    )  # fmt: skip
    return {"done": done, "output": output, "manifest": mini / "conditions.json"}


def _seed() -> dict:
    from tests.support.conditions import mini_seed

    return mini_seed(**SOLVE_SEED)


def _host(*args: str) -> str:
    return json.dumps([sys.executable, str(KILLER), *args])


def _runs(run) -> dict:
    return json.loads((run["output"] / "beta2_runs.json").read_text())


def _decision(run) -> dict:
    report = evaluate_file(run["output"] / "beta2_runs.json", run["manifest"])
    return report.model_dump(mode="json")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return tmp_path_factory.mktemp("distributed")


@pytest.fixture(scope="module")
def sequential(base):
    return _run(base, "sequential", host=_host())


@pytest.fixture(scope="module")
def jobs2(base):
    return _run(base, "jobs2", "--jobs", "2", host=_host())


@pytest.fixture(scope="module")
def on_ray(base, ray_cluster):
    return _run(
        base, "ray", "--executor", "ray", "--ray-address", ray_cluster.address, host=_host()
    )


def _completed(run) -> dict:
    assert run["done"].returncode == 0, run["done"].stdout + run["done"].stderr
    return json.loads(run["done"].stdout)


def test_the_sequential_run_completes_and_some_memory_runs_pass(sequential):
    summary = _completed(sequential)
    assert summary["runs"] == 40
    records = _runs(sequential)["runs"]
    assert any(r["passed"] for r in records if r["condition"] != "baseline")
    assert not any(r["passed"] for r in records if r["condition"] == "baseline")


def test_jobs_2_gives_the_sequential_runs_file_and_decision(sequential, jobs2):
    _completed(jobs2)
    assert _runs(jobs2) == _runs(sequential)
    assert _decision(jobs2) == _decision(sequential)
    finished = json.loads((jobs2["output"] / "run.json").read_text())
    assert finished["executor"] == {"kind": "local-pool", "jobs": 2}
    receipt = json.loads((jobs2["output"] / "runs" / "h1--baseline.json").read_text())
    assert receipt["worker"]["pid"] != os.getpid()
    assert len(receipt["worker"]["snapshotSha256Checked"]) == 64


def test_local_ray_gives_the_sequential_runs_file_and_decision(sequential, on_ray):
    _completed(on_ray)
    assert _runs(on_ray) == _runs(sequential)
    assert _decision(on_ray) == _decision(sequential)
    finished = json.loads((on_ray["output"] / "run.json").read_text())
    assert finished["executor"]["kind"] == "ray"
    assert finished["executor"]["jobs"] == 2
    receipts = [json.loads(p.read_text()) for p in (on_ray["output"] / "runs").iterdir()]
    assert all("rayNodeId" in r["worker"] for r in receipts)


def test_receipts_of_a_distributed_run_keep_the_sequential_layout(sequential, jobs2):
    names = sorted(p.name for p in (sequential["output"] / "runs").iterdir())
    assert sorted(p.name for p in (jobs2["output"] / "runs").iterdir()) == names
    for path in (jobs2["output"] / "runs").iterdir():
        assert path.stat().st_mode & 0o777 == 0o600
    assert (jobs2["output"]).stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("executor", ["jobs", "ray"])
def test_a_worker_killed_mid_run_is_an_executor_failure_left_out_of_comparisons(
    base, executor, request
):
    if executor == "ray":
        cluster = request.getfixturevalue("ray_cluster")
        extra = ("--executor", "ray", "--ray-address", cluster.address)
    else:
        extra = ("--jobs", "2")
    marker = base / f"killed-{executor}.marker"
    host = _host("--kill-on", "h3", "--marker", str(marker))
    run = _run(base, f"killed-{executor}", *extra, host=host)
    assert run["done"].returncode == 1, run["done"].stdout + run["done"].stderr
    summary = json.loads(run["done"].stdout)
    assert summary["executorFailures"] == 1
    assert summary["runs"] == 40
    records = _runs(run)["runs"]
    (lost,) = [r for r in records if r.get("host_failure")]
    assert lost["task_id"] == "h3"
    assert lost["host_failure"] == "executor-failure"
    assert lost["passed"] is False
    assert lost["verification_after"] is None
    reason = "died" if executor == "jobs" else "WorkerCrashedError"
    assert (
        f"executor-failure: {'local worker process' if executor == 'jobs' else 'ray'}"
        in (lost["notes"])
    )
    assert reason in lost["notes"]
    report = _decision(run)
    paired = {p["condition"]: p for p in report["paired"]}
    hit = [c for c in paired if lost["condition"] in ("baseline", c)]
    assert hit
    for condition in hit:
        assert paired[condition]["executor_failures"] == ["h3"]
        assert "h3" not in [t["task_id"] for t in paired[condition]["tasks"]]
    flagged = {(f["task_id"], f["condition"]): f["flags"] for f in report["flagged_runs"]}
    assert flagged[("h3", lost["condition"])] == ["executor-failure"]


@pytest.mark.parametrize("executor", ["jobs", "ray"])
def test_a_stopped_coordinator_leaves_aborted_json_and_finalize_clears_the_lock(
    base, executor, request
):
    mini = base / "input"
    if not mini.exists():
        _run(base, "warm-up", host=_host())
    if executor == "ray":
        cluster = request.getfixturevalue("ray_cluster")
        extra = ["--executor", "ray", "--ray-address", cluster.address]
    else:
        extra = ["--jobs", "2"]
    output = base / f"stopped-{executor}"
    host = json.dumps([sys.executable, "-m", "lorelab.testing.fixture_host", "--sleep-s", "3"])
    process = subprocess.Popen(
        [
            sys.executable, "-m", "lorelab", "eval", "conditions", "run",
            "--manifest", str(mini / "conditions.json"), "--host", host,
            "--output", str(output), "--home", str(base / f"stopped-{executor}-home"),
            "--seed-memory", str(mini / "seed.json"), "--json", *extra,
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **RAY_ENV},
    )  # fmt: skip
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        runs = output / "runs"
        if runs.is_dir() and len(list(runs.iterdir())) >= 2:
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    aborted = json.loads((output / "aborted.json").read_text())
    assert aborted["outcome"] == "interrupted"
    assert aborted["lockActive"] is True
    written = sorted(p.name for p in (output / "runs").iterdir())
    assert len(written) == aborted["runsCompleted"]
    time.sleep(5)
    # Nothing is written after the coordinator stopped: its workers were stopped with it.
    assert sorted(p.name for p in (output / "runs").iterdir()) == written
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", "eval", "conditions", "finalize",
         "--output", str(output), "--json"],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["recorded"] == 0
    final = json.loads((output / "finalize.json").read_text())
    assert final["lock"]["active"] is False


def test_a_node_whose_lorelab_files_differ_fails_its_host_calls_as_identity_changed(
    base, ray_cluster, tmp_path_factory
):
    with ray_cluster.odd_node(tmp_path_factory.mktemp("odd-lorelab")):
        run = _run(
            base, "odd-node", "--executor", "ray", "--ray-address", ray_cluster.address,
            "--jobs", "3", host=_host(),
        )  # fmt: skip
    assert run["done"].returncode == 3, run["done"].stdout + run["done"].stderr
    receipts = [json.loads(p.read_text()) for p in (run["output"] / "runs").iterdir()]
    by_node: dict[str, list[dict]] = {}
    for receipt in receipts:
        by_node.setdefault(receipt["worker"]["rayNodeId"], []).append(receipt)
    changed = {
        node_id
        for node_id, found in by_node.items()
        if any(r["record"]["host_failure"] == "identity-changed" for r in found)
    }
    assert len(by_node) == 2
    assert len(changed) == 1
    (odd_node,) = changed
    assert all(r["record"]["host_failure"] == "identity-changed" for r in by_node[odd_node])
    assert all(
        r["record"]["host_failure"] is None
        for n, rs in by_node.items()
        if n != odd_node
        for r in rs
    )
