"""A memory with neither plans, Skills nor a Dream, run end to end on the mini project: the
MemCoder stand-in serving only its prepare and record tools. skill_planned and dreaming are
not applicable: named in preflight with the reason, never run, absent from the runs file, and
the report decides on memory_guided. Real processes throughout, hence ``slow``."""

import json
import sys

import pytest

from tests.support.conditions import run_mini

pytestmark = pytest.mark.slow


def test_a_memory_without_plans_skills_or_dream_runs_only_the_conditions_that_apply(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "lorelab.testing.memcoder",
        "--state",
        str(tmp_path / "state.json"),
        "--only",
        "memcoder_prepare,memcoder_record",
    ]
    result = run_mini(tmp_path, argv)
    assert result["run"].exit_code == 0, result["run"].output
    output = result["output"]
    preflight = json.loads((output / "preflight.json").read_text())
    skipped = {
        entry["condition"]: entry["reason"] for entry in preflight["conditionsNotApplicable"]
    }
    assert set(skipped) == {"skill_planned", "dreaming"}
    assert "memcoder_start" in skipped["skill_planned"]
    assert "memcoder_dream" in skipped["dreaming"]
    assert preflight["seeding"]["skill"] is None
    assert preflight["memory"]["serverInfo"]["name"]
    assert len(preflight["memory"]["profileSha256"]) == 64
    assert len(preflight["seedFile"]["sha256"]) == 64
    runs = json.loads((output / "beta2_runs.json").read_text())
    assert {run["condition"] for run in runs["runs"]} == {"baseline", "memory_guided"}
    assert set(runs["conditions_not_applicable"]) == {"skill_planned", "dreaming"}
    assert not (output / "dream.json").exists()
    calls = json.loads((output / "memory-calls.json").read_text())["calls"]
    assert {call["operation"] for call in calls} == {"record", "prepare"}
    assert result["evaluate"].exit_code in (0, 1), result["evaluate"].output
    report = json.loads(result["evaluate"].output)
    assert report["decision"]["condition"] == "memory_guided"
    assert [c["condition"] for c in report["conditions"]] == ["baseline", "memory_guided"]
