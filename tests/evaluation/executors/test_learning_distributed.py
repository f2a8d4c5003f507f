"""``lorelab eval learning --jobs 2`` and ``--executor ray`` against a sequential run of the same
input (the default dataset, one repetition, the fixture worker, one seed):

* the schedule is the one decided up front, the same whichever executor ran it;
* every trial's status and detections, and every recall figure, are identical;
* the summary (and its text table) marks time comparisons ``confounded``;
* on a Ray node whose lorelab files hash differently, the identity check there fails each
  trial before any call: recorded as ``invalid`` with the changes, never skipped.

Each run is six trials with real pytest runs, hence ``slow``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ray_cluster import RAY_ENV

pytestmark = pytest.mark.slow

TIMEOUT_S = 900
SEED = "11"


def _learning(base: Path, name: str, *extra: str, as_json: bool = True):
    output = base / name
    done = subprocess.run(
        [
            sys.executable, "-m", "lorelab", "eval", "learning", "run", "--dataset", "default",
            "--agent", "fixture", "--repeat", "1", "--seed", SEED, "--output", str(output),
            *(["--json"] if as_json else []), *extra,
        ],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        env={**os.environ, **RAY_ENV},
    )  # fmt: skip
    return {"done": done, "output": output}


def _trials(run) -> list[dict]:
    trials = sorted((run["output"] / "trials").iterdir())
    return [json.loads(path.read_text()) for path in trials]


def _summary(run) -> dict:
    return json.loads((run["output"] / "summary.json").read_text())


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return tmp_path_factory.mktemp("learning")


@pytest.fixture(scope="module")
def sequential(base):
    return _learning(base, "sequential")


@pytest.fixture(scope="module")
def jobs2(base):
    return _learning(base, "jobs2", "--jobs", "2", as_json=False)


@pytest.fixture(scope="module")
def on_ray(base, ray_cluster):
    return _learning(base, "ray", "--executor", "ray", "--ray-address", ray_cluster.address)


def _same_outcomes(run, sequential) -> None:
    assert run["done"].returncode == sequential["done"].returncode == 0, run["done"].stderr
    names = sorted(p.name for p in (sequential["output"] / "trials").iterdir())
    assert sorted(p.name for p in (run["output"] / "trials").iterdir()) == names
    keys = ("position", "specification", "repetition", "arm", "status", "detected", "recall")
    assert [{k: t[k] for k in keys} for t in _trials(run)] == [
        {k: t[k] for k in keys} for t in _trials(sequential)
    ]
    ours, theirs = _summary(run), _summary(sequential)
    assert ours["paired"] == theirs["paired"]
    for arm in ("memory", "no-memory"):
        for key in ("defects", "detected", "defectRecall", "qualifiedTrials", "passingCases"):
            assert ours["arms"][arm][key] == theirs["arms"][arm][key]


def test_the_schedule_is_decided_up_front_and_recorded_the_same(sequential, jobs2):
    seq = json.loads((sequential["output"] / "manifest.json").read_text())
    par = json.loads((jobs2["output"] / "manifest.json").read_text())
    assert par["schedule"] == seq["schedule"]
    assert par["orderSeed"] == seq["orderSeed"] == int(SEED)


def test_jobs_2_keeps_every_recall_figure_and_marks_time_confounded(sequential, jobs2):
    _same_outcomes(jobs2, sequential)
    assert _summary(sequential)["timeComparisons"] == "sequential"
    summary = _summary(jobs2)
    assert summary["timeComparisons"] == "confounded"
    assert summary["executor"] == {"kind": "local-pool", "jobs": 2}
    assert "time comparisons: **confounded**" in (jobs2["output"] / "summary.md").read_text()
    assert "time comparisons: confounded" in jobs2["done"].stdout
    assert "confounded" not in sequential["done"].stdout
    assert all(t["worker"]["pid"] != os.getpid() for t in _trials(jobs2))
    assert all(t["worker"] is None for t in _trials(sequential))


def _same_receipt_fields(run) -> None:
    """Trials run side by side carry what sequential ones do: byte accounting per trial, the
    private payloads and responses, and the summary's controller, identity and times."""
    summary = _summary(run)
    manifest = json.loads((run["output"] / "manifest.json").read_text())
    for key in ("workerIdentity", "verificationScope", "implementationHashes"):
        assert summary[key] == manifest[key]
    assert summary["controller"]["settings"] == manifest["settings"]
    assert manifest["manifest"]["id"] == manifest["manifestId"]
    for arm in summary["arms"].values():
        assert arm["stableTrials"] == arm["qualifiedTrials"]
        assert isinstance(arm["totalMs"], int)
    names = sorted(p.name for p in (run["output"] / "trials").iterdir())
    assert sorted(p.name for p in (run["output"] / "private").iterdir()) == names
    for name, trial in zip(names, _trials(run), strict=True):
        assert trial["byteAccounting"] == manifest["byteAccounting"]
        kept = json.loads((run["output"] / "private" / name).read_text())
        roles = [receipt["role"] for receipt in trial["generation"]["roles"]]
        assert [call["role"] for call in kept["calls"]] == roles


def test_jobs_2_trials_carry_the_same_receipt_fields_as_sequential_ones(sequential, jobs2):
    _same_receipt_fields(sequential)
    _same_receipt_fields(jobs2)


def test_local_ray_keeps_every_recall_figure_and_marks_time_confounded(sequential, on_ray):
    _same_outcomes(on_ray, sequential)
    _same_receipt_fields(on_ray)
    summary = _summary(on_ray)
    assert summary["timeComparisons"] == "confounded"
    assert summary["executor"]["kind"] == "ray"
    assert all("rayNodeId" in t["worker"] for t in _trials(on_ray))


def test_a_node_whose_lorelab_files_differ_fails_its_trials_there(
    base, ray_cluster, tmp_path_factory
):
    with ray_cluster.odd_node(tmp_path_factory.mktemp("odd-lorelab")):
        run = _learning(
            base, "odd-node", "--executor", "ray", "--ray-address", ray_cluster.address,
            "--jobs", "3",
        )  # fmt: skip
    assert run["done"].returncode == 1, run["done"].stderr
    by_node: dict[str, list[dict]] = {}
    for trial in _trials(run):
        by_node.setdefault(trial["worker"]["rayNodeId"], []).append(trial)
    failed = {
        node_id: trials
        for node_id, trials in by_node.items()
        if any(t["status"] == "invalid" for t in trials)
    }
    assert len(by_node) == 2
    assert len(failed) == 1
    (trials,) = failed.values()
    for trial in trials:
        assert trial["status"] == "invalid"
        assert trial["reason"].startswith("identity-changed before the trial; no call was made: ")
        assert trial["identityChecks"]
        assert trial["detected"] == 0
        (receipt,) = trial["generation"]["roles"]
        assert receipt["spawned"] is False
        assert receipt["failure"] == "identity-changed"
    others = [t for node_id, ts in by_node.items() if node_id not in failed for t in ts]
    assert all(t["status"] == "qualified" for t in others)
