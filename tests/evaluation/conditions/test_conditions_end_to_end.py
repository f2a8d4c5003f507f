"""End to end, offline: ``lorelab eval conditions run`` on the example project with the fixture
host and lorelab's own memory over MCP, then ``lorelab evaluate`` and ``finalize``.

One real run (about 52 task x condition runs, each with real pytest verifications) is shared by
the tests of this module; it takes minutes, hence ``slow``.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from lorelab.evaluation.conditions._manifest import CONDITIONS, load_manifest
from lorelab.workers import adapter_argv

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "conditions"
MANIFEST = load_manifest(EXAMPLE / "conditions.json")
TIMEOUT_S = 1500


def _lorelab(*args: str, check_code: int | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if check_code is not None:
        assert done.returncode == check_code, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("conditions-e2e")
    output = base / "out"
    home = base / "home"
    done = _lorelab(
        "eval", "conditions", "run",
        "--manifest", str(EXAMPLE / "conditions.json"),
        "--host", "fixture-host",
        "--output", str(output),
        "--home", str(home),
        "--seed-memory", str(EXAMPLE / "memory_seed.json"),
        "--identity", "e2e test",
        "--json",
    )  # fmt: skip
    return {"done": done, "output": output, "home": home}


def _records(run) -> list[dict]:
    return json.loads((run["output"] / "beta2_runs.json").read_text())["runs"]


def _by_key(run) -> dict[tuple[str, str], dict]:
    return {(r["task_id"], r["condition"]): r for r in _records(run)}


def test_the_run_completes_with_every_task_under_every_condition(run):
    assert run["done"].returncode == 0, run["done"].stdout + run["done"].stderr
    summary = json.loads(run["done"].stdout)
    assert summary["evidenceKind"] == "protocol-fixture"
    assert summary["hostFailures"] == 0
    keys = [(r["task_id"], r["condition"]) for r in _records(run)]
    assert len(keys) == len(set(keys)) == len(MANIFEST.tasks) * 4
    assert set(keys) == {(t.id, c) for t in MANIFEST.tasks for c in CONDITIONS}


def test_run_then_evaluate_gives_a_decision_labelled_protocol_fixture(run):
    runs_file = run["output"] / "beta2_runs.json"
    done = _lorelab(
        "eval", "conditions", "decide", "--input", str(runs_file),
        "--manifest", str(EXAMPLE / "conditions.json"), "--json", check_code=0,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["evidenceKind"] == "protocol-fixture"
    assert report["decision"]["verdict"] in ("advance", "do-not-advance", "inconclusive")
    assert report["runs"] == len(MANIFEST.tasks) * 4
    assert report["holdouts"] == MANIFEST.holdout_ids()
    again = _lorelab("eval", "conditions", "decide", "--input", str(runs_file), "--manifest",
                     str(EXAMPLE / "conditions.json"), "--json", check_code=0)  # fmt: skip
    assert again.stdout == done.stdout


def test_receipts_are_a_private_directory_of_private_files(run):
    output = run["output"]
    assert stat.S_IMODE(os.stat(output).st_mode) == 0o700
    files = [p for p in output.rglob("*") if p.is_file()]
    assert len(files) > len(MANIFEST.tasks) * 4
    for path in files:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    for name in ("manifest.json", "preflight.json", "dream.json", "run.json", "beta2_runs.json"):
        assert (output / name).is_file()


def test_the_host_identity_is_bound_and_full_attestation_is_never_claimed(run):
    preflight = json.loads((run["output"] / "preflight.json").read_text())
    identity = preflight["host"]["identity"]
    assert identity["declaredArgv"] == adapter_argv("fixture-host")
    assert identity["operatorIdentity"] == "e2e test"
    assert identity["implementationHashes"]
    assert preflight["verificationScope"]["fullRuntimeAttestation"] is False
    assert "transportBudget" in preflight["byteAccounting"]["inputBytes"]
    assert preflight["lock"]["active"] is True
    assert preflight["seeding"]["skill"]["id"] == MANIFEST.skill.id
    assert preflight["seedsInMemory"]["checked"] is True


def test_every_run_verifies_before_and_after_with_output_digests(run):
    for record in _records(run):
        before, after = record["verification_before"], record["verification_after"]
        assert before["exit_code"] != 0, record["task_id"]
        assert len(before["output_sha256"]) == 64
        assert len(after["output_sha256"]) == 64
        assert (after["exit_code"] == 0) == record["passed"]
        assert record["reprompt_count"] == record["host_calls"] - 1
        assert record["reprompt_count"] <= MANIFEST.rework_budget
        # The fixture host reports its cycles (at most one per call): rework is known.
        assert record["rework_count"] == max(0, record["host_cycles"] - 1)
        assert record["rework_count"] <= record["reprompt_count"]
        assert record["evidence_kind"] == "protocol-fixture"


def test_baseline_hosts_never_see_memory_output(run):
    for record in _records(run):
        if record["condition"] != "baseline":
            assert isinstance(record["retrieval_relevant"], bool)
            continue
        # Left out, not null: MemCoder's evaluate refuses a null retrieval_relevant.
        assert "retrieval_relevant" not in record
        assert record["guidance_tokens"] == 0
        assert record["plan_id"] is None
        assert record["brief_id"] is None
        receipt = json.loads((run["output"] / record["receipt"]).read_text())
        assert receipt["guidance"] is None


def test_the_fixture_outcomes_follow_the_documented_rule(run):
    runs = _by_key(run)
    # The prompt names the file: solved without memory, at the first attempt.
    assert runs[("h-format-thousands", "baseline")]["passed"] is True
    assert runs[("h-format-thousands", "baseline")]["rework_count"] == 0
    # Only the failure output names the file: solved on rework.
    assert runs[("h-csv-quoted", "baseline")]["passed"] is True
    assert runs[("h-csv-quoted", "baseline")]["rework_count"] == 1
    # Nothing names the file and memory holds nothing about it: failed everywhere.
    for condition in CONDITIONS:
        assert runs[("h-free-shipping-boundary", condition)]["passed"] is False
    # Re-prompted (reworkBudget 1), it repeats its one wrong edit: no further cycle, no rework.
    stuck = runs[("h-free-shipping-boundary", "baseline")]
    assert MANIFEST.rework_budget == 1
    assert (stuck["reprompt_count"], stuck["host_cycles"], stuck["rework_count"]) == (1, 1, 0)
    # The Skill's plan names `grep -rn quantize shop`: solved under skill_planned only.
    assert runs[("h-line-total-half-up", "baseline")]["passed"] is False
    planned = runs[("h-line-total-half-up", "skill_planned")]
    assert planned["passed"] is True
    assert planned["skill_id"] == MANIFEST.skill.id
    assert planned["plan_id"]
    assert planned["retrieval_relevant"] is True


def test_dream_candidates_are_sandbox_checked_before_use(run):
    dream = json.loads((run["output"] / "dream.json").read_text())
    assert dream["supported"] is True
    assert dream["candidateIds"]
    for check in dream["checks"]:
        assert check["results"], check
        promoted = check["candidateId"] in dream["promoted"]
        assert promoted == (
            check["passed"] and all(r["status"] == "passed" for r in check["results"])
        )
    for record in _records(run):
        if record["condition"] == "dreaming":
            assert record["dream_candidate_ids"] == dream["candidateIds"]
            assert record["unchecked_items_served"] is False
            assert set(record["dream_items_served"]) <= set(dream["promoted"].values())


def _record_via_mcp(home: Path, task_text: str, task_id: str) -> tuple[bool, str]:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcp import Client

    async def call() -> tuple[bool, str]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "lorelab", "mcp", "--home", str(home)]
        )
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                result = await client.call_tool(
                    "lore_record",
                    {
                        "task": task_text,
                        "task_id": task_id,
                        "summary": "leaked solution",
                        "outcome": "passed",
                        "verification": {"command": "pytest", "exit_code": 0},
                    },
                )
                text = " ".join(getattr(block, "text", "") for block in result.content)
                return result.is_error, text

    return anyio.run(call)


def test_the_holdout_lock_holds_until_finalize_records_the_outcomes(run):
    home = run["home"]
    holdout = MANIFEST.task("h-line-total-half-up")
    refused = _lorelab(
        "memory", "--home", str(home), "record", "--task", "anything", "--task-id", holdout.id,
        "--summary", "leak", "--outcome", "passed", "--verify-command", "pytest",
        "--verify-exit-code", "0",
    )  # fmt: skip
    assert refused.returncode == 2
    assert "holdout" in refused.stderr
    is_error, message = _record_via_mcp(home, holdout.prompt, "other-id")
    assert is_error is True
    assert "holdout" in message

    done = _lorelab("eval", "conditions", "finalize", "--output", str(run["output"]), "--json",
                    check_code=0)  # fmt: skip
    summary = json.loads(done.stdout)
    assert summary["status"] == "finalized"
    finalized = json.loads((run["output"] / "finalize.json").read_text())
    assert finalized["lock"]["active"] is False
    recorded = {(r["taskId"], r["condition"]) for r in finalized["recorded"]}
    expected = {(t.id, c) for t in MANIFEST.tasks for c in CONDITIONS if c != "baseline"}
    assert recorded == expected
    planned = [r for r in _records(run) if r["plan_id"]]
    assert {o["planId"] for o in finalized["outcomes"]} == {r["plan_id"] for r in planned}
    health = _lorelab("memory", "--home", str(home), "skills", "health", "--json", check_code=0)
    skills = {s["skill_id"]: s for s in json.loads(health.stdout)["skills"]}
    passed_plans = sum(1 for r in planned if r["passed"] and r["skill_id"] == MANIFEST.skill.id)
    assert skills[MANIFEST.skill.id]["successes"] == passed_plans

    is_error, _ = _record_via_mcp(home, holdout.prompt, holdout.id)
    assert is_error is False
    again = _lorelab("eval", "conditions", "finalize", "--output", str(run["output"]))
    assert again.returncode == 2
    assert "already finalized" in again.stderr
