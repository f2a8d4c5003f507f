"""End to end, offline: the conditions example with ``"profile": "memcoder"`` and the shipped
seed file, against the stand-in serving MemCoder's captured schemas, with the fixture host;
then finalize and evaluate. The example's two seed tasks and eight holdouts, the protocol's
minimum of ten tasks (40 task x condition runs; the whole example's 52 runs are covered, with
lorelab's own memory, by ``test_conditions_end_to_end``), hence ``slow``."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.conditions import run_lorelab

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "conditions"
TIMEOUT_S = 1500
MIN_TASKS = 10  # the protocol's minimum (a manifest with fewer is refused)


def _lorelab(*args: str) -> subprocess.CompletedProcess[str]:
    return run_lorelab(*args, timeout_s=TIMEOUT_S)


def _seed_tasks_and_holdouts(manifest: dict) -> list[dict]:
    seeded = {seed["taskId"] for seed in manifest["seeds"]}
    tasks = [task for task in manifest["tasks"] if task["id"] in seeded or task["holdout"]]
    assert len(tasks) == MIN_TASKS
    return tasks


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("memcoder-example")
    manifest = json.loads((EXAMPLE / "conditions.json").read_text(encoding="utf-8"))
    manifest["project"]["path"] = str(EXAMPLE / "project")
    manifest["tasks"] = _seed_tasks_and_holdouts(manifest)
    manifest["memory"] = {
        "profile": "memcoder",
        "argv": [sys.executable, "-m", "lorelab.testing.memcoder", "--state", str(base / "s.json")],
    }
    path = base / "conditions.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    output = base / "out"
    run = _lorelab(
        "eval", "conditions", "run", "--manifest", str(path), "--host", "fixture-host",
        "--output", str(output), "--seed-memory", str(EXAMPLE / "memory_seed.json"), "--json",
    )  # fmt: skip
    finalize = _lorelab("eval", "conditions", "finalize", "--output", str(output))
    evaluate = _lorelab(
        "eval",
        "conditions",
        "decide",
        "--input",
        str(output / "beta2_runs.json"),
        "--manifest",
        str(path),
        "--json",
    )
    return {"run": run, "finalize": finalize, "evaluate": evaluate, "output": output}


def _read(run, name):
    return json.loads((run["output"] / name).read_text())


def test_the_example_completes_against_memcoders_schemas_with_no_memory_failure(example_run):
    done = example_run["run"]
    assert done.returncode == 0, done.stdout + done.stderr
    summary = _read(example_run, "run.json")
    assert summary["runs"] == MIN_TASKS * 4
    assert summary["memoryFailures"] == 0
    assert summary["evidenceKind"] == "protocol-fixture"


def test_the_example_seeding_captures_memcoders_ids(example_run):
    seeding = _read(example_run, "preflight.json")["seeding"]
    assert set(seeding["ids"]) == {"exp-1", "exp-2", "skill-1"}
    assert len(seeding["experiences"]) == 6
    assert all(entry["id"].startswith("mem_") for entry in seeding["experiences"])


def test_the_example_names_every_unsupported_operation_and_finalizes(example_run):
    assert example_run["finalize"].returncode == 0, example_run["finalize"].stderr
    named = {e["operation"] for e in _read(example_run, "preflight.json")["memory"]["unsupported"]}
    assert named == {"check", "promote_candidate", "show", "list", "lock_set", "lock_clear"}
    finalize = _read(example_run, "finalize.json")
    assert finalize["errors"] == []
    assert {e["operation"] for e in finalize["unsupportedOperations"]} == named


def test_evaluate_gives_a_decision_on_the_example(example_run):
    assert example_run["evaluate"].returncode == 0, example_run["evaluate"].stderr
    report = json.loads(example_run["evaluate"].stdout)
    assert report["decision"]["verdict"] in ("advance", "do-not-advance", "inconclusive")
    assert report["evidenceKind"] == "protocol-fixture"
