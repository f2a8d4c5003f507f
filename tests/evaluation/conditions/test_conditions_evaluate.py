import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import SchemaError
from lorelab.evaluation.conditions import evaluate_file, read_runs
from lorelab.evaluation.conditions._evaluate import decide, evaluate
from lorelab.evaluation.conditions._manifest import CONDITIONS, Thresholds
from lorelab.evaluation.stats import sign_test_p_value

EXAMPLE_MANIFEST = (
    Path(__file__).resolve().parents[3] / "examples" / "conditions" / "conditions.json"
)

# A runs file written by hand in the protocol's own format (snake_case, extra fields, notes).
HAND_WRITTEN = """{
  "protocol": "beta2",
  "generated_by": "hand",
  "runs": [
    {"task_id": "t1", "condition": "baseline", "passed": false, "rework_count": 2,
     "retrieval_relevant": null, "guidance_tokens": 0, "notes": "wrong file", "host": "x"},
    {"task_id": "t1", "condition": "memory_guided", "passed": true, "rework_count": 0,
     "retrieval_relevant": true, "guidance_tokens": 180, "notes": ""},
    {"task_id": "t1", "condition": "skill_planned", "passed": true, "rework_count": 1,
     "retrieval_relevant": true, "guidance_tokens": 240, "notes": ""},
    {"task_id": "t1", "condition": "dreaming", "passed": true, "rework_count": 0,
     "retrieval_relevant": true, "guidance_tokens": 200, "notes": ""},
    {"task_id": "t2", "condition": "baseline", "passed": true, "rework_count": 0,
     "retrieval_relevant": false, "guidance_tokens": 0, "notes": ""},
    {"task_id": "t2", "condition": "memory_guided", "passed": false, "rework_count": 2,
     "retrieval_relevant": false, "guidance_tokens": 300, "notes": "misled"},
    {"task_id": "t2", "condition": "skill_planned", "passed": true, "rework_count": 0,
     "retrieval_relevant": true, "guidance_tokens": 260, "notes": ""},
    {"task_id": "t2", "condition": "dreaming", "passed": true, "rework_count": 0,
     "retrieval_relevant": false, "guidance_tokens": 0, "notes": "empty brief"}
  ]
}
"""


def _run(task, condition, passed, rework=0, relevant=True, tokens=100, **extra):
    record = {
        "task_id": task,
        "condition": condition,
        "passed": passed,
        "rework_count": rework,
        "retrieval_relevant": None if condition == "baseline" else relevant,
        "guidance_tokens": 0 if condition == "baseline" else tokens,
        "notes": "",
    }
    record.update(extra)
    return record


def _fillers(tasks: int, fill_to: int = 10) -> list[dict]:
    """Non-holdout tasks that bring a runs file up to the protocol's 10 tasks."""
    return [
        _run(f"n{i}", condition, True, holdout=False)
        for i in range(1, fill_to - tasks + 1)
        for condition in CONDITIONS
    ]


def _runs(outcomes: dict[str, dict[str, bool]], **extra) -> dict:
    """outcomes: task -> condition -> passed. Holdout runs get non-holdout tasks added up to
    the protocol's 10 tasks, so the rule, not the minimum, decides."""
    runs = []
    for task, by_condition in outcomes.items():
        for condition in CONDITIONS:
            runs.append(
                _run(
                    task,
                    condition,
                    by_condition[condition],
                    rework=0 if by_condition[condition] else 2,
                    **extra,
                )
            )
    if extra.get("holdout") is True:
        runs += _fillers(len(outcomes))
    return {"runs": runs}


def _uniform(n, baseline, other):
    return {
        f"t{i}": {
            "baseline": baseline,
            "memory_guided": other,
            "skill_planned": other,
            "dreaming": other,
        }
        for i in range(1, n + 1)
    }


def test_a_hand_written_runs_file_is_read_unchanged(tmp_path):
    path = tmp_path / "beta2_runs.json"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    before = path.read_bytes()
    loaded = read_runs(path)
    assert path.read_bytes() == before
    assert len(loaded.runs) == 8
    assert loaded.runs[0].model_extra == {"host": "x"}
    report = evaluate(loaded)
    assert report.holdout_source == "all-tasks"
    assert report.holdouts == ["t1", "t2"]
    by_name = {c.condition: c for c in report.conditions}
    assert by_name["baseline"].pass_rate == 0.5
    assert by_name["baseline"].retrieval_relevance_rate == 0.0
    assert by_name["baseline"].relevance_known == 1
    assert by_name["memory_guided"].pass_rate == 0.5
    assert by_name["memory_guided"].mean_rework == 1.0
    assert by_name["memory_guided"].mean_guidance_tokens == 240.0
    assert by_name["skill_planned"].retrieval_relevance_rate == 1.0
    guided = next(p for p in report.paired if p.condition == "memory_guided")
    assert guided.negative_transfer == ["t2"]
    assert guided.pass_rate_delta == 0.0
    assert guided.polluted == ["t2"]
    assert guided.sign_test.positive == 1
    assert guided.sign_test.negative == 1
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    # An empty brief (0 tokens) that is not relevant is irrelevance, not pollution.
    assert dreaming.polluted == []
    assert dreaming.irrelevance_rate == 0.5
    assert dreaming.pass_rate_delta == 0.5
    assert dreaming.token_cost.total_guidance_tokens == 200


def test_the_same_runs_file_gives_the_same_report_byte_for_byte(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    first = CliRunner().invoke(app, ["evaluate", "--input", str(path), "--json"])
    second = CliRunner().invoke(app, ["evaluate", "--input", str(path), "--json"])
    # Two tasks are below the protocol's minimum: the report is produced, and exits 1.
    assert first.exit_code == 1, first.output
    assert first.output == second.output
    assert json.loads(first.output)["inputSha256"]


def test_a_missing_task_condition_pair_is_refused_naming_it(write_json):
    data = _runs(_uniform(3, False, True))
    data["runs"] = [
        r for r in data["runs"] if not (r["task_id"] == "t2" and r["condition"] == "dreaming")
    ]
    with pytest.raises(SchemaError, match=r"missing task x condition: t2 x dreaming"):
        read_runs(write_json(data))


def test_a_repeated_task_condition_pair_is_refused_naming_it(write_json):
    data = _runs(_uniform(3, False, True))
    data["runs"].append(_run("t3", "skill_planned", True))
    with pytest.raises(SchemaError, match=r"repeated task x condition: t3 x skill_planned"):
        read_runs(write_json(data))


@pytest.mark.parametrize("absent", ["missing", "null"])
def test_a_memory_condition_without_retrieval_relevant_is_refused(write_json, absent):
    data = _runs(_uniform(2, False, True))
    target = next(
        r for r in data["runs"] if r["task_id"] == "t2" and r["condition"] == "skill_planned"
    )
    if absent == "missing":
        del target["retrieval_relevant"]
    else:
        target["retrieval_relevant"] = None
    with pytest.raises(SchemaError, match=r"lack retrieval_relevant: t2 x skill_planned"):
        read_runs(write_json(data))


def test_baseline_runs_may_omit_retrieval_relevant(write_json):
    data = _runs(_uniform(2, False, True))
    for run in data["runs"]:
        if run["condition"] == "baseline":
            del run["retrieval_relevant"]
            del run["guidance_tokens"]
    report = evaluate(read_runs(write_json(data)))
    baseline = report.conditions[0]
    assert baseline.retrieval_relevance_rate is None
    assert baseline.mean_guidance_tokens is None


def test_an_unknown_condition_is_refused(write_json):
    data = _runs(_uniform(2, False, True))
    data["runs"].append(_run("t1", "oracle", True))
    with pytest.raises(SchemaError, match="condition"):
        read_runs(write_json(data))


def test_a_passed_value_that_is_not_a_boolean_is_refused(write_json):
    data = _runs(_uniform(2, False, True))
    data["runs"][0]["passed"] = 1
    with pytest.raises(SchemaError, match="passed"):
        read_runs(write_json(data))


def test_an_empty_runs_list_is_refused(write_json):
    with pytest.raises(SchemaError, match="runs is empty"):
        read_runs(write_json({"runs": []}))


def test_the_cli_refuses_an_incomplete_file_with_exit_2_and_one_line(write_json):
    data = _runs(_uniform(2, False, True))
    data["runs"].pop()
    result = CliRunner().invoke(app, ["evaluate", "--input", str(write_json(data))])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "missing task x condition: t2 x dreaming" in result.output
    assert "Traceback" not in result.output


def test_without_a_holdout_field_every_task_is_a_holdout(write_json):
    report = evaluate(read_runs(write_json(_runs(_uniform(4, False, True)))))
    assert report.holdout_source == "all-tasks"
    assert report.holdouts == ["t1", "t2", "t3", "t4"]


def test_a_holdout_field_on_every_run_selects_the_holdouts(write_json):
    data = _runs(_uniform(4, False, True))
    for run in data["runs"]:
        run["holdout"] = run["task_id"] in ("t2", "t4")
    report = evaluate(read_runs(write_json(data)))
    assert report.holdout_source == "runs"
    assert report.holdouts == ["t2", "t4"]
    assert all(p.holdouts == 2 for p in report.paired)
    # Runs of non-holdout tasks still count in the per-condition figures.
    assert report.conditions[0].runs == 4


def test_a_holdout_field_on_only_some_runs_is_refused(write_json):
    data = _runs(_uniform(3, False, True))
    data["runs"][0]["holdout"] = True
    with pytest.raises(SchemaError, match="state it on every run or on none"):
        evaluate(read_runs(write_json(data)))


def test_runs_of_one_task_that_disagree_on_holdout_are_refused(write_json):
    data = _runs(_uniform(2, False, True))
    for run in data["runs"]:
        run["holdout"] = True
    data["runs"][1]["holdout"] = False
    with pytest.raises(SchemaError, match="disagree on holdout: t1"):
        evaluate(read_runs(write_json(data)))


def test_with_a_manifest_the_holdouts_and_thresholds_come_from_it(
    write_json, example_manifest_data
):
    example_manifest_data["thresholds"]["maxPollutionRate"] = 0.5
    manifest_path = write_json(example_manifest_data)
    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    report = evaluate_file(write_json(_runs(outcomes)), manifest_path)
    assert report.holdout_source == "manifest"
    assert report.holdouts == [t["id"] for t in example_manifest_data["tasks"] if t["holdout"]]
    assert report.decision.thresholds_source == "manifest"
    assert report.decision.thresholds.max_pollution_rate == 0.5


def test_with_a_manifest_a_runs_file_missing_one_of_its_tasks_is_refused(
    write_json, example_manifest_data
):
    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    del outcomes["h-slug-accents"]
    with pytest.raises(SchemaError, match="h-slug-accents x baseline"):
        evaluate_file(write_json(_runs(outcomes)), write_json(example_manifest_data))


def test_with_a_manifest_a_runs_file_naming_another_task_is_refused(
    write_json, example_manifest_data
):
    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    outcomes["stranger"] = dict.fromkeys(CONDITIONS, True)
    with pytest.raises(SchemaError, match="not in the manifest: stranger"):
        evaluate_file(write_json(_runs(outcomes)), write_json(example_manifest_data))


def test_holdout_flags_that_contradict_the_manifest_are_refused(write_json, example_manifest_data):
    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    data = _runs(outcomes)
    for run in data["runs"]:
        run["holdout"] = False
    with pytest.raises(SchemaError, match="disagree with the manifest"):
        evaluate_file(write_json(data), write_json(example_manifest_data))


def test_dreaming_advances_when_it_improves_every_holdout_within_the_thresholds(write_json):
    report = evaluate(read_runs(write_json(_runs(_uniform(6, False, True), holdout=True))))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.sign_test.positive == 6
    assert dreaming.sign_test.p_value == pytest.approx(sign_test_p_value(6, 0))
    assert report.decision.verdict == "advance"
    assert report.decision.thresholds_source == "defaults"


def test_dreaming_is_inconclusive_when_the_sample_cannot_reach_significance(write_json):
    report = evaluate(read_runs(write_json(_runs(_uniform(5, False, True), holdout=True))))
    # Without a manifest, five holdouts are below the protocol's minimum ...
    assert report.decision.verdict == "insufficient"
    assert "cannot be reached" in report.power_note
    # ... and the rule itself, applied to them, finds the improvement not significant.
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    decision = decide(dreaming, Thresholds(), "defaults")
    assert decision.verdict == "inconclusive"
    assert "not significant" in " ".join(decision.reasons)


def test_negative_transfer_beyond_the_threshold_means_do_not_advance(write_json):
    outcomes = _uniform(7, False, True)
    outcomes["t7"] = {
        "baseline": True,
        "memory_guided": True,
        "skill_planned": True,
        "dreaming": False,
    }
    report = evaluate(read_runs(write_json(_runs(outcomes, holdout=True))))
    assert report.decision.verdict == "do-not-advance"
    assert "negative transfer on 1 holdout task(s) (t7)" in report.decision.reasons[0]


def test_pollution_beyond_the_threshold_means_do_not_advance(write_json):
    data = _runs(_uniform(8, False, True), holdout=True)
    for run in data["runs"]:
        if run["condition"] == "dreaming" and run["task_id"] in ("t1", "t2"):
            run["unchecked_items_served"] = True
    report = evaluate(read_runs(write_json(data)))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.polluted == ["t1", "t2"]
    assert dreaming.pollution_rate == 0.25
    assert report.decision.verdict == "do-not-advance"
    assert "pollution" in report.decision.reasons[0]


def test_token_cost_beyond_the_threshold_means_do_not_advance(write_json):
    data = _runs(_uniform(8, False, True), holdout=True)
    for run in data["runs"]:
        if run["condition"] == "dreaming":
            run["guidance_tokens"] = 5000
    report = evaluate(read_runs(write_json(data)))
    assert report.decision.verdict == "do-not-advance"
    assert "mean guidance tokens 5000.0" in report.decision.reasons[0]


def test_unknown_token_cost_keeps_an_improvement_inconclusive(write_json):
    data = _runs(_uniform(8, False, True), holdout=True)
    for run in data["runs"]:
        if run["condition"] == "dreaming":
            run["guidance_tokens"] = None
    report = evaluate(read_runs(write_json(data)))
    assert report.decision.verdict == "inconclusive"
    assert "token cost is unknown" in report.decision.reasons[1]


def test_no_improvement_on_enough_holdouts_means_do_not_advance(write_json):
    report = evaluate(read_runs(write_json(_runs(_uniform(6, True, True), holdout=True))))
    assert report.decision.verdict == "do-not-advance"
    assert "no holdout improved across 6" in report.decision.reasons[1]


def test_no_improvement_on_too_few_holdouts_is_inconclusive(write_json):
    report = evaluate(read_runs(write_json(_runs(_uniform(3, True, True), holdout=True))))
    assert report.decision.verdict == "insufficient"
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert decide(dreaming, Thresholds(), "defaults").verdict == "inconclusive"


def test_less_rework_with_the_same_outcome_counts_as_an_improvement():
    from lorelab.evaluation.conditions._runs import parse_runs

    runs = []
    for i in range(1, 7):
        for condition in CONDITIONS:
            runs.append(
                _run(
                    f"t{i}",
                    condition,
                    True,
                    rework=1 if condition == "baseline" else 0,
                    holdout=True,
                )
            )
    runs += _fillers(6)
    report = evaluate(parse_runs(json.dumps({"runs": runs}).encode(), "mem"))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.pass_rate_delta == 0
    assert dreaming.rework_delta == -1
    assert dreaming.sign_test.positive == 6
    assert report.decision.verdict == "advance"


def test_decide_is_a_pure_function_of_the_comparison_and_thresholds(write_json):
    report = evaluate(read_runs(write_json(_runs(_uniform(6, False, True), holdout=True))))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    strict = Thresholds(alpha=0.01)
    assert decide(dreaming, strict, "manifest").verdict == "inconclusive"
    assert decide(dreaming, Thresholds(), "defaults").verdict == "advance"


def test_skills_that_fail_repeatedly_are_marked_review_required_and_runs_are_kept(write_json):
    data = _runs(_uniform(4, False, False))
    for run in data["runs"]:
        if run["condition"] == "skill_planned":
            run["skill_id"] = "skill-a" if run["task_id"] in ("t1", "t2", "t3") else "skill-b"
            run["plan_id"] = f"plan-{run['task_id']}"
    report = evaluate(read_runs(write_json(data)))
    assert [s.skill_id for s in report.review_required] == ["skill-a"]
    assert report.review_required[0].failed_runs == 3
    assert report.review_required[0].failed_tasks == ["t1", "t2", "t3"]
    assert report.runs == 16
    assert sum(c.runs for c in report.conditions) == 16


def test_fixture_runs_are_labelled_and_never_evidence(write_json):
    data = _runs(_uniform(6, False, True), evidence_kind="protocol-fixture")
    report = evaluate(read_runs(write_json(data)))
    assert report.evidence_kind == "protocol-fixture"
    assert any("never evidence" in s for s in report.cannot_prove)


def test_the_report_states_what_the_protocol_cannot_prove(write_json):
    report = evaluate(read_runs(write_json(_runs(_uniform(6, False, True)))))
    text = " ".join(report.cannot_prove)
    assert "Causality" in text
    assert "Task quality" in text
    assert "verify command does not measure" in text
    assert report.evidence_kind is None


def test_the_readable_table_names_the_decision_and_the_limits(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    result = CliRunner().invoke(app, ["evaluate", "--input", str(path)])
    assert result.exit_code == 1, result.output
    assert "decision for dreaming: insufficient" in result.output
    assert "memory_guided" in result.output
    assert "cannot prove" in result.output


# ---------------------------------------------------------------- decisions evaluate may not make


def _manifest_runs(example_manifest_data, manifest_path, **top) -> dict:
    from lorelab.io import SCRIPT_HASH_CAP, sha256_file

    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    data = _runs(outcomes)
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
    result = CliRunner().invoke(app, ["evaluate", "--input", str(runs), "--manifest", str(changed)])
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
    data = _runs(_uniform(6, False, True), holdout=True)
    data["manifest_sha256"] = "not-a-digest"
    with pytest.raises(SchemaError, match="manifest_sha256 must be 64 lowercase hex digits"):
        read_runs(write_json(data))


def test_without_known_holdouts_the_decision_is_insufficient_even_when_it_would_advance(
    write_json,
):
    report = evaluate(read_runs(write_json(_runs(_uniform(10, False, True)))))
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
    data = _runs(_uniform(6, False, True), holdout=True)
    target = next(r for r in data["runs"] if r["task_id"] == "t4" and r["condition"] == "baseline")
    target[field] = value
    result = CliRunner().invoke(app, ["evaluate", "--input", str(write_json(data))])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert f"baseline runs must never see memory, but these did: t4 ({named})" in result.output


def test_flagged_holdout_runs_are_reported_and_keep_dreaming_from_advancing(write_json):
    data = _runs(_uniform(6, False, True), holdout=True)
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
    table = CliRunner().invoke(app, ["evaluate", "--input", str(write_json(data))])
    assert "t2 x dreaming (holdout): verify-files-edited" in table.output


def test_a_holdout_served_its_own_past_solution_counts_as_pollution(write_json):
    data = _runs(_uniform(8, False, True), holdout=True)
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
                _run(
                    f"t{i}",
                    condition,
                    False,
                    rework=2 if condition == "baseline" else 0,
                    holdout=True,
                    **extra,
                )
            )
    return {"runs": runs + _fillers(8)}


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
    data = _runs(_uniform(7, False, True), holdout=True)
    for run in data["runs"]:
        if run["task_id"] == "t7" and run["condition"] == "baseline":
            run["host_failure"] = "timeout"
    report = evaluate(read_runs(write_json(data)))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.sign_test.positive == 7
    assert report.decision.verdict == "inconclusive"
    assert "t7 x baseline (host-failure)" in report.decision.reasons[1]


def test_runs_that_failed_at_the_host_do_not_mark_their_skill_for_review(write_json):
    data = _runs(_uniform(4, False, False))
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
    data = _runs(_uniform(6, False, True), holdout=True)
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
        runs.append(_run(task, "baseline", True, rework=1, holdout=holdout))
        for condition, call in calls.items():
            runs.append(
                _run(
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
    data = _runs(_uniform(8, False, True), holdout=True)
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
    result = CliRunner().invoke(app, ["evaluate", "--input", str(write_json(_memory_down()))])
    assert result.exit_code == 1, result.output
    assert "decision for dreaming: invalid" in result.output
    assert "39 of 52 runs could not call the memory" in result.output


def _enough_to_advance(tasks: int, holdouts: int) -> dict:
    runs = []
    for i in range(1, tasks + 1):
        for condition in CONDITIONS:
            passed = condition != "baseline"
            runs.append(
                _run(f"t{i}", condition, passed, rework=0 if passed else 2, holdout=i <= holdouts)
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
    result = CliRunner().invoke(app, ["evaluate", "--input", str(path)])
    assert result.exit_code == 1, result.output
    assert "decision for dreaming: insufficient" in result.output
    assert "Per condition" in result.output


def test_at_the_protocols_minimums_the_rule_decides(write_json):
    report = evaluate(read_runs(write_json(_enough_to_advance(10, 6))))
    assert report.decision.verdict == "advance"
    assert report.exit_code() == 0


def test_control_characters_and_markup_in_task_ids_are_printed_escaped(write_json):
    hostile = "t\x1b[31mred\x07\u202eevil[bold]x[/bold]"
    outcomes = _uniform(3, False, True)
    outcomes[hostile] = outcomes.pop("t1")
    result = CliRunner().invoke(app, ["evaluate", "--input", str(write_json(_runs(outcomes)))])
    assert "Traceback" not in result.output
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in result.output
    # The id is shown, escaped, and its brackets are text, not markup.
    assert "[bold]x[/bold]" in result.output
    assert "\\x1b" in result.output


def test_json_output_keeps_task_ids_exact(write_json):
    hostile = "t\x1b[31mred"
    outcomes = _uniform(3, False, True)
    outcomes[hostile] = outcomes.pop("t1")
    result = CliRunner().invoke(
        app, ["evaluate", "--input", str(write_json(_runs(outcomes))), "--json"]
    )
    assert hostile in json.loads(result.stdout)["holdouts"]
