"""lorelab evaluate: decisions it may not make (manifests, flagged runs, memory failures, the
protocol's minimums) and hostile task ids."""

import json

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import SchemaError
from lorelab.evaluation.conditions import evaluate_file, read_runs
from lorelab.evaluation.conditions._evaluate import evaluate
from lorelab.evaluation.conditions._manifest import CONDITIONS
from tests.support.conditions import filler_runs, run_record, runs_of, uniform_outcomes

# ---------------------------------------------------------------- decisions evaluate may not make


def _manifest_runs(example_manifest_data, manifest_path, **top) -> dict:
    from lorelab.io import SCRIPT_HASH_CAP, sha256_file

    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    data = runs_of(outcomes)
    data["manifest_sha256"] = sha256_file(manifest_path, cap=SCRIPT_HASH_CAP)
    data.update(top)
    return data


def test_a_manifest_other_than_the_one_the_runs_were_made_under_is_refused(
    write_json, example_manifest_data
):
    declared = write_json(example_manifest_data, "declared.json")
    runs = write_json(_manifest_runs(example_manifest_data, declared))
    report = evaluate_file(runs, declared)
    assert report.manifest_checked is True
    example_manifest_data["thresholds"]["alpha"] = 0.2
    changed = write_json(example_manifest_data, "changed.json")
    result = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(runs), "--manifest", str(changed)]
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert "is not the manifest the runs were made under" in result.output


def test_runs_made_under_a_manifest_without_it_get_an_inconclusive_decision(
    write_json, example_manifest_data
):
    declared = write_json(example_manifest_data, "declared.json")
    data = _manifest_runs(example_manifest_data, declared)
    holdouts = {t["id"] for t in example_manifest_data["tasks"] if t["holdout"]}
    for run in data["runs"]:
        run["holdout"] = run["task_id"] in holdouts
        if run["condition"] == "baseline":
            run["passed"], run["rework_count"] = False, 2
    report = evaluate(read_runs(write_json(data)))
    assert report.manifest_sha256 == data["manifest_sha256"]
    assert report.manifest_checked is False
    assert report.decision.verdict == "inconclusive"
    assert "declared thresholds were not given" in report.decision.reasons[0]
    assert report.decision.reasons[-1] == "without it the rule would say advance"
    assert evaluate_file(write_json(data), declared).decision.verdict == "advance"


def test_a_malformed_manifest_digest_in_the_runs_file_is_refused(write_json):
    data = runs_of(uniform_outcomes(6, False, True), holdout=True)
    data["manifest_sha256"] = "not-a-digest"
    with pytest.raises(SchemaError, match="manifest_sha256 must be 64 lowercase hex digits"):
        read_runs(write_json(data))


def test_without_known_holdouts_the_decision_is_insufficient_even_when_it_would_advance(
    write_json,
):
    report = evaluate(read_runs(write_json(runs_of(uniform_outcomes(10, False, True)))))
    assert report.holdout_source == "all-tasks"
    assert report.decision.verdict == "insufficient"
    assert "--holdouts" in report.decision.reasons[-1]
    assert "holdouts are not known" in report.decision.reasons[0]
    assert "seeds included" in report.decision.reasons[0]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("retrieval_relevant", True, "retrieval_relevant true"),
        ("guidance_tokens", 40, "guidance_tokens 40"),
        ("plan_id", "plan-3", "plan_id plan-3"),
        ("skill_id", "skill-1", "skill_id skill-1"),
        ("unchecked_items_served", True, "served memory items"),
    ],
)
def test_a_baseline_run_that_saw_memory_is_refused_naming_it(write_json, field, value, named):
    data = runs_of(uniform_outcomes(6, False, True), holdout=True)
    target = next(r for r in data["runs"] if r["task_id"] == "t4" and r["condition"] == "baseline")
    target[field] = value
    result = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(write_json(data))]
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert f"baseline runs must never see memory, but these did: t4 ({named})" in result.output


def test_flagged_holdout_runs_are_reported_and_keep_dreaming_from_advancing(write_json):
    data = runs_of(uniform_outcomes(6, False, True), holdout=True)
    for run in data["runs"]:
        if run["task_id"] == "t2" and run["condition"] == "dreaming":
            run["verify_files_edited"] = ["tests/test_t2.py"]
        if run["task_id"] == "t3" and run["condition"] == "memory_guided":
            run["host_model_mismatch"] = True
    report = evaluate(read_runs(write_json(data)))
    flagged = {(f.task_id, f.condition): f.flags for f in report.flagged_runs}
    assert flagged == {
        ("t2", "dreaming"): ["verify-files-edited"],
        ("t3", "memory_guided"): ["host-model-mismatch"],
    }
    assert report.decision.verdict == "inconclusive"
    assert "t2 x dreaming (verify-files-edited)" in report.decision.reasons[1]
    assert report.runs == 40
    table = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(write_json(data))]
    )
    assert "t2 x dreaming (holdout): verify-files-edited" in table.output


def test_a_holdout_served_its_own_past_solution_counts_as_pollution(write_json):
    data = runs_of(uniform_outcomes(8, False, True), holdout=True)
    for run in data["runs"]:
        if run["condition"] == "dreaming" and run["task_id"] in ("t1", "t2"):
            run["own_solutions_served"] = ["exp-43"]
    report = evaluate(read_runs(write_json(data)))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.polluted == ["t1", "t2"]
    assert report.decision.verdict == "do-not-advance"
    assert [f.flags for f in report.flagged_runs] == [["own-solution-served"]] * 2


def _both_failing_with_less_rework(**dreaming_extra):
    runs = []
    for i in range(1, 9):
        for condition in CONDITIONS:
            extra = dreaming_extra if condition == "dreaming" else {}
            runs.append(
                run_record(
                    f"t{i}",
                    condition,
                    False,
                    rework=2 if condition == "baseline" else 0,
                    holdout=True,
                    **extra,
                )
            )
    return {"runs": runs + filler_runs(8)}


def test_both_arms_failing_with_less_rework_is_a_tie_and_never_advances(write_json):
    report = evaluate(read_runs(write_json(_both_failing_with_less_rework())))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.condition_pass_rate == 0
    assert dreaming.rework_delta == -2
    assert dreaming.rework_delta_both_passed is None
    assert dreaming.sign_test.positive == 0
    assert dreaming.sign_test.ties == 8
    assert report.decision.verdict == "do-not-advance"
    assert "no holdout improved across 8" in report.decision.reasons[1]


def test_dreaming_runs_that_failed_at_the_memory_never_advance(write_json):
    # "memory-error" is how older runs files name a memory failure.
    data = _both_failing_with_less_rework(host_failure="memory-error")
    report = evaluate(read_runs(write_json(data)))
    assert report.decision.verdict == "invalid"
    flagged = [f for f in report.flagged_runs if f.condition == "dreaming"]
    assert len(flagged) == 8
    assert all(f.flags == ["memory-failure"] for f in flagged)


def test_a_host_failure_on_a_holdout_keeps_an_otherwise_advancing_dreaming_inconclusive(
    write_json,
):
    data = runs_of(uniform_outcomes(7, False, True), holdout=True)
    for run in data["runs"]:
        if run["task_id"] == "t7" and run["condition"] == "baseline":
            run["host_failure"] = "timeout"
    report = evaluate(read_runs(write_json(data)))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.sign_test.positive == 7
    assert report.decision.verdict == "inconclusive"
    assert "t7 x baseline (host-failure)" in report.decision.reasons[1]


def test_runs_that_failed_at_the_host_do_not_mark_their_skill_for_review(write_json):
    data = runs_of(uniform_outcomes(4, False, False))
    for run in data["runs"]:
        if run["condition"] == "skill_planned":
            run["skill_id"] = "skill-a"
            run["plan_id"] = f"plan-{run['task_id']}"
            if run["task_id"] != "t1":
                run["host_failure"] = "memory-error" if run["task_id"] == "t2" else "timeout"
    report = evaluate(read_runs(write_json(data)))
    assert report.review_required == []
    assert report.runs == 16


@pytest.mark.parametrize("field", ["rework_count", "guidance_tokens"])
def test_a_count_too_large_for_any_run_is_refused_not_a_crash(write_json, field):
    data = runs_of(uniform_outcomes(6, False, True), holdout=True)
    data["runs"][1][field] = 10**400
    with pytest.raises(SchemaError, match=field):
        read_runs(write_json(data))


def test_a_runs_file_over_its_limit_is_refused_as_a_runs_file(tmp_path):
    from lorelab.errors import InputFileError

    path = tmp_path / "big.json"
    path.write_bytes(b" " * (8 * 1024 * 1024 + 1))
    with pytest.raises(InputFileError, match="exceeds the runs-file limit") as info:
        read_runs(path)
    assert "fixture" not in str(info.value)


# ---------------------------------------------------------------- memory failures and minimums


def _memory_down(tasks: int = 13, holdouts: int = 6) -> dict:
    """A profile that could not call the memory at all: every memory-condition run failed its
    memory call; baseline ran and passed."""
    runs = []
    calls = {"memory_guided": "prepare", "skill_planned": "start", "dreaming": "prepare"}
    for i in range(1, tasks + 1):
        task = f"t{i}"
        holdout = i <= holdouts
        runs.append(run_record(task, "baseline", True, rework=1, holdout=holdout))
        for condition, call in calls.items():
            runs.append(
                run_record(
                    task,
                    condition,
                    False,
                    relevant=False,
                    tokens=0,
                    holdout=holdout,
                    host_failure="memory-failure",
                    memory_calls_failed=[call],
                )
            )
    return {"runs": runs}


def test_a_memory_that_could_not_be_called_makes_the_decision_invalid_not_negative(write_json):
    report = evaluate(read_runs(write_json(_memory_down())))
    decision = report.decision
    assert decision.verdict == "invalid"
    assert decision.reasons[0] == (
        "39 of 52 runs could not call the memory; failed calls: prepare (26 run(s)), "
        "start (13 run(s))"
    )
    assert "t1 x memory_guided" in decision.reasons[1]
    assert "negative transfer" not in " ".join(decision.reasons)
    assert report.exit_code() == 1


def test_memory_failure_runs_are_left_out_of_every_delta(write_json):
    report = evaluate(read_runs(write_json(_memory_down())))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.holdouts == 0
    assert dreaming.memory_failures == ["t1", "t2", "t3", "t4", "t5", "t6"]
    assert dreaming.pass_rate_delta is None
    assert dreaming.rework_delta is None
    assert dreaming.negative_transfer == []
    assert dreaming.irrelevance_rate is None
    by_name = {c.condition: c for c in report.conditions}
    assert by_name["dreaming"].memory_failures == 13
    assert by_name["dreaming"].pass_rate is None
    assert by_name["baseline"].pass_rate == 1.0


def test_one_memory_failure_leaves_its_holdout_out_and_still_makes_the_decision_invalid(
    write_json,
):
    data = runs_of(uniform_outcomes(8, False, True), holdout=True)
    for run in data["runs"]:
        if run["task_id"] == "t3" and run["condition"] == "dreaming":
            run.update(passed=False, host_failure="memory-failure", memory_calls_failed=["dream"])
    report = evaluate(read_runs(write_json(data)))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.holdouts == 7
    assert dreaming.memory_failures == ["t3"]
    assert dreaming.pass_rate_delta == 1.0
    assert dreaming.sign_test.positive == 7
    assert report.decision.verdict == "invalid"
    assert "dream (1 run(s))" in report.decision.reasons[0]


def test_the_cli_prints_an_invalid_report_and_exits_1(write_json):
    result = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(write_json(_memory_down()))]
    )
    assert result.exit_code == 1, result.output
    assert "decision for dreaming: invalid" in result.output
    assert "39 of 52 runs could not call the memory" in result.output


def _enough_to_advance(tasks: int, holdouts: int) -> dict:
    runs = []
    for i in range(1, tasks + 1):
        for condition in CONDITIONS:
            passed = condition != "baseline"
            runs.append(
                run_record(
                    f"t{i}", condition, passed, rework=0 if passed else 2, holdout=i <= holdouts
                )
            )
    return {"runs": runs}


@pytest.mark.parametrize(
    ("tasks", "holdouts", "reason"),
    [
        (10, 5, "5 holdout task(s); the protocol needs at least 6"),
        (9, 7, "9 task(s); the protocol needs at least 10"),
    ],
)
def test_without_a_manifest_fewer_than_the_protocols_minimums_is_insufficient(
    write_json, tasks, holdouts, reason
):
    path = write_json(_enough_to_advance(tasks, holdouts))
    report = evaluate(read_runs(path))
    assert report.decision.verdict == "insufficient"
    assert report.decision.reasons == [reason]
    result = CliRunner().invoke(app, ["eval", "conditions", "decide", "--input", str(path)])
    assert result.exit_code == 1, result.output
    assert "decision for dreaming: insufficient" in result.output
    assert "Per condition" in result.output


def test_at_the_protocols_minimums_the_rule_decides(write_json):
    report = evaluate(read_runs(write_json(_enough_to_advance(10, 6))))
    assert report.decision.verdict == "advance"
    assert report.exit_code() == 0


def test_control_characters_and_markup_in_task_ids_are_printed_escaped(write_json):
    hostile = "t\x1b[31mred\x07\u202eevil[bold]x[/bold]"
    outcomes = uniform_outcomes(3, False, True)
    outcomes[hostile] = outcomes.pop("t1")
    result = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(write_json(runs_of(outcomes)))]
    )
    assert "Traceback" not in result.output
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in result.output
    # The id is shown, escaped, and its brackets are text, not markup.
    assert "[bold]x[/bold]" in result.output
    assert "\\x1b" in result.output


def test_json_output_keeps_task_ids_exact(write_json):
    hostile = "t\x1b[31mred"
    outcomes = uniform_outcomes(3, False, True)
    outcomes[hostile] = outcomes.pop("t1")
    result = CliRunner().invoke(
        app,
        ["eval", "conditions", "decide", "--input", str(write_json(runs_of(outcomes))), "--json"],
    )
    assert hostile in json.loads(result.stdout)["holdouts"]
