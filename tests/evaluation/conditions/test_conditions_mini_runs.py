"""The runner end to end on the generated mini project (10 tasks, verify ``python check.py``):

* run A: lorelab's own memory over MCP and the fixture host asked for a declared model; then
  an interrupted finalize that is run again, and a second run on the finalized memory;
* run B: a stand-in memory that serves a holdout its own solution and an unchecked Dream
  Skill and fails one prepare, and a host that edits its verify script and claims another
  model than declared.

Each run is about 40 task x condition runs with real processes (some 15 s), hence ``slow``.
"""

import json
import subprocess
import sys

import pytest

from lorelab.errors import IntegrityFailure
from lorelab.evaluation.conditions import evaluate_file, finalize_conditions
from lorelab.evaluation.conditions._manifest import CONDITIONS
from lorelab.evaluation.conditions._memory import MemoryToolError, MemoryUnderTest
from lorelab.workers import adapter_argv
from tests.support.conditions import DATA, mini_manifest, mini_seed, run_lorelab, write_mini_project

pytestmark = pytest.mark.slow

TIMEOUT_S = 600
MINI_HOST = DATA / "mini_host.py"
STANDIN = DATA / "lorelab_standin.py"


def _lorelab(*args: str) -> subprocess.CompletedProcess[str]:
    return run_lorelab(*args, timeout_s=TIMEOUT_S)


def _records(output):
    return json.loads((output / "beta2_runs.json").read_text())["runs"]


def _experiences(home):
    done = _lorelab(
        "memory", "--home", str(home), "list", "--kind", "experience", "--limit", "1000", "--json"
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["items"]


# ---------------------------------------------------------------- run A: lorelab memory


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    base = tmp_path_factory.mktemp("mini-a")
    manifest = base / "conditions.json"
    manifest.write_text(json.dumps(mini_manifest(write_mini_project(base), model="fixture-model")))
    seed = base / "seed.json"
    seed.write_text(json.dumps(mini_seed()))
    output, home = base / "out", base / "home"
    done = _lorelab(
        "eval", "conditions", "run", "--manifest", str(manifest), "--host", "fixture-host",
        "--output", str(output), "--home", str(home), "--seed-memory", str(seed),
        "--json",
    )  # fmt: skip
    return {"done": done, "output": output, "home": home, "manifest": manifest, "base": base}


def test_the_declared_model_reaches_the_fixture_host_and_its_claim_is_recorded(run_a):
    assert run_a["done"].returncode == 0, run_a["done"].stdout + run_a["done"].stderr
    summary = json.loads(run_a["done"].stdout)
    assert summary["modelMismatches"] == 0
    assert summary["memoryFailures"] == 0
    preflight = json.loads((run_a["output"] / "preflight.json").read_text())
    assert preflight["host"]["argv"] == [*adapter_argv("fixture-host"), "--model", "fixture-model"]
    assert preflight["host"]["identity"]["model"]["requested"] == "fixture-model"
    assert preflight["host"]["model"]["passedAs"] == "--model"
    assert preflight["holdoutsInMemory"] == {
        "checked": True,
        "experiences": 2,
        "holdoutExperiences": 0,
    }
    for record in _records(run_a["output"]):
        assert record["host_models_claimed"] == ["fixture-model"]
        assert record["host_model_mismatch"] is False
        assert record["flags"] == []
        if record["condition"] != "baseline":
            assert record["unchecked_items_served"] is False
            assert record["own_solutions_served"] == []


def test_each_memory_run_records_the_tiers_of_what_was_served_as_the_receipt_shows(run_a):
    assert run_a["done"].returncode == 0, run_a["done"].stderr
    graded = 0
    for record in _records(run_a["output"]):
        if record["condition"] == "baseline":
            assert "served_tiers" not in record
            continue
        receipt = json.loads((run_a["output"] / record["receipt"]).read_text())
        items = receipt["guidance"]["servedItems"]
        tiers = [item["tier"] for item in items if "tier" in item]
        assert all(tier in ("match", "related") for tier in tiers)
        assert all(0 <= item["confidence"] <= 1 for item in items if "tier" in item)
        if tiers:
            graded += 1
            expected = {"match": tiers.count("match"), "related": tiers.count("related")}
            assert record["served_tiers"] == expected
        else:
            assert "served_tiers" not in record
    assert graded > 0


@pytest.fixture(scope="module")
def finalized_a(run_a):
    assert run_a["done"].returncode == 0, run_a["done"].stderr
    output, home = run_a["output"], run_a["home"]
    # An interrupted finalize cleared the lock but died before its journal said so ...
    cleared = _lorelab("memory", "--home", str(home), "lock", "clear", "mini-eval")
    assert cleared.returncode == 0, cleared.stderr
    # ... and then died right after the memory stored its fifth record.
    original = MemoryUnderTest.call
    records = {"n": 0}

    async def dies_after_fifth_record(self, operation, arguments, context=None):
        result = await original(self, operation, arguments, context)
        if operation == "record":
            records["n"] += 1
            if records["n"] == 5:
                raise MemoryToolError(operation, "lore_record", "session lost", transport=True)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MemoryUnderTest, "call", dies_after_fifth_record)
        with pytest.raises(IntegrityFailure, match="run finalize again") as stopped:
            finalize_conditions(output)
    journal = sorted(p.name for p in (output / "finalize-journal").iterdir())
    interrupted = {"error": str(stopped.value), "journal": journal}
    interrupted["finalizeWritten"] = (output / "finalize.json").exists()
    summary = finalize_conditions(output)
    return {"interrupted": interrupted, "summary": summary, **run_a}


def test_an_interrupted_finalize_is_run_again_without_losing_or_repeating_a_record(finalized_a):
    interrupted = finalized_a["interrupted"]
    assert interrupted["finalizeWritten"] is False
    assert "lock.json" in interrupted["journal"]
    assert sum(n.endswith("-intent.json") for n in interrupted["journal"] if "record" in n) == 5
    assert sum(n.startswith("record-") and "intent" not in n for n in interrupted["journal"]) == 4
    summary = finalized_a["summary"]
    assert summary.status == "finalized"
    assert summary.resumed is True
    assert summary.exit_code == 0
    expected = {(t, c) for t in ("s1", "s2", "n1", "n2", "h1", "h2", "h3", "h4", "h5", "h6")
                for c in CONDITIONS if c != "baseline"}  # fmt: skip
    finalized = json.loads((finalized_a["output"] / "finalize.json").read_text())
    assert {(r["taskId"], r["condition"]) for r in finalized["recorded"]} == expected
    assert len(finalized["recorded"]) == len(expected)
    assert sum(1 for r in finalized["recorded"] if r.get("fromJournal")) == 4
    assert sum(1 for r in finalized["recorded"] if r.get("recoveredFromMemory")) == 1
    assert finalized["lock"]["method"] == "already-cleared"
    assert finalized["lock"]["active"] is False
    # The memory holds the two seeds and each memory-condition run exactly once.
    recorded = [e for e in _experiences(finalized_a["home"]) if e["task_id"] not in ("s1", "s2")
                or e["summary"].startswith("[")]  # fmt: skip
    keys = [(e["task_id"], e["summary"].split("]")[0]) for e in recorded]
    assert len(keys) == len(set(keys)) == len(expected)
    again = _lorelab("eval", "conditions", "finalize", "--output", str(finalized_a["output"]))
    assert again.returncode == 2
    assert "already finalized" in again.stderr


def test_finalize_records_the_host_that_did_the_work(finalized_a):
    hosts = {
        e["provenance"]["host"]
        for e in _experiences(finalized_a["home"])
        if e["summary"].startswith("[")
    }
    assert hosts == {"lorelab adapter fixture-host --model fixture-model"}


def test_a_second_run_on_a_memory_holding_the_holdout_outcomes_is_refused(finalized_a, tmp_path):
    done = _lorelab(
        "eval", "conditions", "run", "--manifest", str(finalized_a["manifest"]), "--host",
        "fixture-host", "--output", str(tmp_path / "again"), "--home",
        str(finalized_a["home"]),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "already holds 18 experience(s) of holdout tasks" in done.stderr
    assert not (tmp_path / "again" / "beta2_runs.json").exists()


# ---------------------------------------------------------------- run B: stand-in memory


def _seed_item(item_id, task):
    return {
        "kind": "experience",
        "id": item_id,
        "task_id": task,
        "task": f"make check {task} pass",
        "trust": "verified",
        "qa": "approved",
    }


@pytest.fixture(scope="module")
def run_b(tmp_path_factory):
    base = tmp_path_factory.mktemp("mini-b")
    data = mini_manifest(write_mini_project(base), model="mini-model")
    next(t for t in data["tasks"] if t["id"] == "h6")["prompt"] = "CHEAT make check h6 pass"
    manifest = base / "conditions.json"
    manifest.write_text(json.dumps(data))
    scenario = {
        "items": {
            "exp-1": _seed_item("exp-1", "s1"),
            "exp-2": _seed_item("exp-2", "s2"),
            "skill-1": {"kind": "skill", "id": "skill-1", "origin": "promoted",
                        "candidate_id": None, "source_experience_ids": ["exp-1", "exp-2"]},
            "exp-5": {**_seed_item("exp-5", None), "task": "make check h1 pass"},
            "skill-9": {"kind": "skill", "id": "skill-9", "origin": "dream",
                        "candidate_id": "cand-3", "source_experience_ids": []},
            "cand-3": {"kind": "candidate", "id": "cand-3", "state": "check_failed",
                       "last_check": {"passed": False}},
        },
        "brief": {"text": "SOLVE it: write the marker under done/", "experiences": ["exp-5"],
                  "skills": ["skill-9"]},
        "plan": {"plan_id": "plan-1", "skill_id": "skill-1",
                 "steps": [{"command": "grep -rn done .", "expected_exit_code": 0}]},
        "fail_prepare_for": ["h2"],
        "dream": True,
    }  # fmt: skip
    scenario_path = base / "scenario.json"
    scenario_path.write_text(json.dumps(scenario))
    output = base / "out"
    host = json.dumps([sys.executable, str(MINI_HOST), "--claim-model", "other-model"])
    done = _lorelab(
        "eval", "conditions", "run", "--manifest", str(manifest), "--host", host,
        "--output", str(output), "--memory-argv",
        json.dumps([sys.executable, str(STANDIN), str(scenario_path)]), "--json",
    )  # fmt: skip
    return {"done": done, "output": output, "manifest": manifest}


def _by_key(output):
    return {(r["task_id"], r["condition"]): r for r in _records(output)}


def test_a_run_with_memory_errors_or_another_model_exits_1_and_counts_them(run_b):
    done = run_b["done"]
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["memoryFailures"] == 2
    assert summary["hostFailures"] == 0
    assert summary["modelMismatches"] == 38
    runs = _by_key(run_b["output"])
    failed = runs[("h2", "dreaming")]
    assert failed["host_failure"] == "memory-failure"
    assert failed["memory_calls_failed"] == ["prepare"]
    assert failed["passed"] is False
    assert "stand-in prepare failure for h2" in failed["notes"]
    assert runs[("h1", "baseline")]["host_models_claimed"] == ["other-model"]
    assert runs[("h1", "baseline")]["host_model_mismatch"] is True
    assert "host-model-mismatch" in runs[("h1", "baseline")]["flags"]
    run_file = json.loads((run_b["output"] / "run.json").read_text())
    assert run_file["exitCode"] == 1
    assert run_file["memoryFailures"] == 2


def test_unchecked_items_and_a_holdouts_own_solution_are_flagged_per_run(run_b):
    runs = _by_key(run_b["output"])
    guided = runs[("h1", "memory_guided")]
    assert guided["own_solutions_served"] == ["exp-5"]
    # memory_guided asks for no Skills, so only the verified (leaked) experience is served.
    assert guided["unchecked_items_served"] is False
    for condition in ("skill_planned", "dreaming"):
        record = runs[("h3", condition)]
        assert record["unchecked_items_served"] is True
        assert "unchecked-items-served" in record["flags"]
        assert record["own_solutions_served"] == []
    # A non-holdout may be served anything about itself; only holdouts leak.
    assert runs[("n1", "memory_guided")]["own_solutions_served"] == []
    receipt = json.loads((run_b["output"] / "runs" / "h3--dreaming.json").read_text())
    reasons = {i["id"]: i.get("unchecked") for i in receipt["guidance"]["servedItems"]}
    assert reasons["skill-9"] == "its candidate cand-3 is 'check_failed' (checks not passed)"
    assert reasons["exp-5"] is None


def test_a_host_that_edits_its_verify_script_is_flagged_in_the_record_and_report(run_b):
    runs = _by_key(run_b["output"])
    for condition in CONDITIONS:
        record = runs[("h6", condition)]
        assert record["verify_files_edited"] == ["check.py"], condition
        assert "verify-files-edited" in record["flags"]
    assert runs[("h5", "baseline")]["verify_files_edited"] == []
    report = evaluate_file(run_b["output"] / "beta2_runs.json", run_b["manifest"])
    flags = {(f.task_id, f.condition): f.flags for f in report.flagged_runs}
    assert "verify-files-edited" in flags[("h6", "baseline")]
    assert "own-solution-served" in flags[("h1", "dreaming")]
    assert report.manifest_checked is True
    # The stand-in failed two prepare calls: no decision can be made on these runs.
    assert report.decision.verdict == "invalid"
    assert "failed calls: prepare (2 run(s))" in report.decision.reasons[0]
