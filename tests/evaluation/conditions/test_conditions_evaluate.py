"""lorelab evaluate: reading a runs file as the protocol writes it, and the decision rule."""

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
from tests.support.conditions import filler_runs, run_record, runs_of, uniform_outcomes

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
    first = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(path), "--json"]
    )
    second = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(path), "--json"]
    )
    # Two tasks are below the protocol's minimum: the report is produced, and exits 1.
    assert first.exit_code == 1, first.output
    assert first.output == second.output
    assert json.loads(first.output)["inputSha256"]


def test_a_missing_task_condition_pair_is_refused_naming_it(write_json):
    data = runs_of(uniform_outcomes(3, False, True))
    data["runs"] = [
        r for r in data["runs"] if not (r["task_id"] == "t2" and r["condition"] == "dreaming")
    ]
    with pytest.raises(SchemaError, match=r"missing task x condition: t2 x dreaming"):
        read_runs(write_json(data))


def test_a_repeated_task_condition_pair_is_refused_naming_it(write_json):
    data = runs_of(uniform_outcomes(3, False, True))
    data["runs"].append(run_record("t3", "skill_planned", True))
    with pytest.raises(SchemaError, match=r"repeated task x condition: t3 x skill_planned"):
        read_runs(write_json(data))


@pytest.mark.parametrize("absent", ["missing", "null"])
def test_a_memory_condition_without_retrieval_relevant_is_refused(write_json, absent):
    data = runs_of(uniform_outcomes(2, False, True))
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
    data = runs_of(uniform_outcomes(2, False, True))
    for run in data["runs"]:
        if run["condition"] == "baseline":
            del run["retrieval_relevant"]
            del run["guidance_tokens"]
    report = evaluate(read_runs(write_json(data)))
    baseline = report.conditions[0]
    assert baseline.retrieval_relevance_rate is None
    assert baseline.mean_guidance_tokens is None


def test_an_unknown_condition_is_refused(write_json):
    data = runs_of(uniform_outcomes(2, False, True))
    data["runs"].append(run_record("t1", "oracle", True))
    with pytest.raises(SchemaError, match="condition"):
        read_runs(write_json(data))


def test_a_passed_value_that_is_not_a_boolean_is_refused(write_json):
    data = runs_of(uniform_outcomes(2, False, True))
    data["runs"][0]["passed"] = 1
    with pytest.raises(SchemaError, match="passed"):
        read_runs(write_json(data))


def test_an_empty_runs_list_is_refused(write_json):
    with pytest.raises(SchemaError, match="runs is empty"):
        read_runs(write_json({"runs": []}))


def test_the_cli_refuses_an_incomplete_file_with_exit_2_and_one_line(write_json):
    data = runs_of(uniform_outcomes(2, False, True))
    data["runs"].pop()
    result = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(write_json(data))]
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "missing task x condition: t2 x dreaming" in result.output
    assert "Traceback" not in result.output


def test_without_a_holdout_field_every_task_is_a_holdout(write_json):
    report = evaluate(read_runs(write_json(runs_of(uniform_outcomes(4, False, True)))))
    assert report.holdout_source == "all-tasks"
    assert report.holdouts == ["t1", "t2", "t3", "t4"]


def test_a_holdout_field_on_every_run_selects_the_holdouts(write_json):
    data = runs_of(uniform_outcomes(4, False, True))
    for run in data["runs"]:
        run["holdout"] = run["task_id"] in ("t2", "t4")
    report = evaluate(read_runs(write_json(data)))
    assert report.holdout_source == "runs"
    assert report.holdouts == ["t2", "t4"]
    assert all(p.holdouts == 2 for p in report.paired)
    # Runs of non-holdout tasks still count in the per-condition figures.
    assert report.conditions[0].runs == 4


def test_a_holdout_field_on_only_some_runs_is_refused(write_json):
    data = runs_of(uniform_outcomes(3, False, True))
    data["runs"][0]["holdout"] = True
    with pytest.raises(SchemaError, match="state it on every run or on none"):
        evaluate(read_runs(write_json(data)))


def test_runs_of_one_task_that_disagree_on_holdout_are_refused(write_json):
    data = runs_of(uniform_outcomes(2, False, True))
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
    report = evaluate_file(write_json(runs_of(outcomes)), manifest_path)
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
        evaluate_file(write_json(runs_of(outcomes)), write_json(example_manifest_data))


def test_with_a_manifest_a_runs_file_naming_another_task_is_refused(
    write_json, example_manifest_data
):
    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    outcomes["stranger"] = dict.fromkeys(CONDITIONS, True)
    with pytest.raises(SchemaError, match="not in the manifest: stranger"):
        evaluate_file(write_json(runs_of(outcomes)), write_json(example_manifest_data))


def test_holdout_flags_that_contradict_the_manifest_are_refused(write_json, example_manifest_data):
    outcomes = {t["id"]: dict.fromkeys(CONDITIONS, True) for t in example_manifest_data["tasks"]}
    data = runs_of(outcomes)
    for run in data["runs"]:
        run["holdout"] = False
    with pytest.raises(SchemaError, match="disagree with the manifest"):
        evaluate_file(write_json(data), write_json(example_manifest_data))


def test_dreaming_advances_when_it_improves_every_holdout_within_the_thresholds(write_json):
    report = evaluate(
        read_runs(write_json(runs_of(uniform_outcomes(6, False, True), holdout=True)))
    )
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.sign_test.positive == 6
    assert dreaming.sign_test.p_value == pytest.approx(sign_test_p_value(6, 0))
    assert report.decision.verdict == "advance"
    assert report.decision.thresholds_source == "defaults"


def test_dreaming_is_inconclusive_when_the_sample_cannot_reach_significance(write_json):
    report = evaluate(
        read_runs(write_json(runs_of(uniform_outcomes(5, False, True), holdout=True)))
    )
    # Without a manifest, five holdouts are below the protocol's minimum ...
    assert report.decision.verdict == "insufficient"
    assert "cannot be reached" in report.power_note
    # ... and the rule itself, applied to them, finds the improvement not significant.
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    decision = decide(dreaming, Thresholds(), "defaults")
    assert decision.verdict == "inconclusive"
    assert "not significant" in " ".join(decision.reasons)


def test_negative_transfer_beyond_the_threshold_means_do_not_advance(write_json):
    outcomes = uniform_outcomes(7, False, True)
    outcomes["t7"] = {
        "baseline": True,
        "memory_guided": True,
        "skill_planned": True,
        "dreaming": False,
    }
    report = evaluate(read_runs(write_json(runs_of(outcomes, holdout=True))))
    assert report.decision.verdict == "do-not-advance"
    assert "negative transfer on 1 holdout task(s) (t7)" in report.decision.reasons[0]


def test_pollution_beyond_the_threshold_means_do_not_advance(write_json):
    data = runs_of(uniform_outcomes(8, False, True), holdout=True)
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
    data = runs_of(uniform_outcomes(8, False, True), holdout=True)
    for run in data["runs"]:
        if run["condition"] == "dreaming":
            run["guidance_tokens"] = 5000
    report = evaluate(read_runs(write_json(data)))
    assert report.decision.verdict == "do-not-advance"
    assert "mean guidance tokens 5000.0" in report.decision.reasons[0]


def test_unknown_token_cost_keeps_an_improvement_inconclusive(write_json):
    data = runs_of(uniform_outcomes(8, False, True), holdout=True)
    for run in data["runs"]:
        if run["condition"] == "dreaming":
            run["guidance_tokens"] = None
    report = evaluate(read_runs(write_json(data)))
    assert report.decision.verdict == "inconclusive"
    assert "token cost is unknown" in report.decision.reasons[1]


def test_no_improvement_on_enough_holdouts_means_do_not_advance(write_json):
    report = evaluate(read_runs(write_json(runs_of(uniform_outcomes(6, True, True), holdout=True))))
    assert report.decision.verdict == "do-not-advance"
    assert "no holdout improved across 6" in report.decision.reasons[1]


def test_no_improvement_on_too_few_holdouts_is_inconclusive(write_json):
    report = evaluate(read_runs(write_json(runs_of(uniform_outcomes(3, True, True), holdout=True))))
    assert report.decision.verdict == "insufficient"
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert decide(dreaming, Thresholds(), "defaults").verdict == "inconclusive"


def test_less_rework_with_the_same_outcome_counts_as_an_improvement():
    from lorelab.evaluation.conditions._runs import parse_runs

    runs = []
    for i in range(1, 7):
        for condition in CONDITIONS:
            runs.append(
                run_record(
                    f"t{i}",
                    condition,
                    True,
                    rework=1 if condition == "baseline" else 0,
                    holdout=True,
                )
            )
    runs += filler_runs(6)
    report = evaluate(parse_runs(json.dumps({"runs": runs}).encode(), "mem"))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.pass_rate_delta == 0
    assert dreaming.rework_delta == -1
    assert dreaming.sign_test.positive == 6
    assert report.decision.verdict == "advance"


def test_decide_is_a_pure_function_of_the_comparison_and_thresholds(write_json):
    report = evaluate(
        read_runs(write_json(runs_of(uniform_outcomes(6, False, True), holdout=True)))
    )
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    strict = Thresholds(alpha=0.01)
    assert decide(dreaming, strict, "manifest").verdict == "inconclusive"
    assert decide(dreaming, Thresholds(), "defaults").verdict == "advance"


def test_skills_that_fail_repeatedly_are_marked_review_required_and_runs_are_kept(write_json):
    data = runs_of(uniform_outcomes(4, False, False))
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
    data = runs_of(uniform_outcomes(6, False, True), evidence_kind="protocol-fixture")
    report = evaluate(read_runs(write_json(data)))
    assert report.evidence_kind == "protocol-fixture"
    assert any("never evidence" in s for s in report.cannot_prove)


def test_the_report_states_what_the_protocol_cannot_prove(write_json):
    report = evaluate(read_runs(write_json(runs_of(uniform_outcomes(6, False, True)))))
    text = " ".join(report.cannot_prove)
    assert "Causality" in text
    assert "Task quality" in text
    assert "verify command does not measure" in text
    assert report.evidence_kind is None


def test_the_readable_table_names_the_decision_and_the_limits(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "conditions", "decide", "--input", str(path)])
    assert result.exit_code == 1, result.output
    assert "decision for dreaming: insufficient" in result.output
    assert "memory_guided" in result.output
    assert "cannot prove" in result.output


def test_an_error_naming_a_task_id_prints_its_control_characters_escaped(write_json):
    # Issue 31 item 18: `missing task x condition: t^[]0;pwned^G ...` reached the terminal raw.
    hostile = "t\x1b]0;pwned\x07\u202e"
    data = runs_of(uniform_outcomes(3, False, True))
    for record in data["runs"]:
        if record["task_id"] == "t2":
            record["task_id"] = hostile
    data["runs"] = [
        r for r in data["runs"] if not (r["task_id"] == hostile and r["condition"] == "dreaming")
    ]
    result = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(write_json(data))]
    )
    assert result.exit_code == 2, result.output
    assert "\x1b" not in result.stderr
    assert "\x07" not in result.stderr
    assert "\u202e" not in result.stderr
    assert "missing task x condition: t\\x1b]0;pwned\\x07\\u202e x dreaming" in result.stderr


def test_the_report_tables_cut_no_header_at_80_columns():
    data = Path(__file__).parents[2] / "report" / "data" / "conditions"
    manifest = Path(__file__).parents[3] / "examples" / "conditions" / "conditions.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "conditions",
            "decide",
            "--input",
            str(data / "beta2_runs.json"),
            "--manifest",
            str(manifest),
        ],
        env={"COLUMNS": "80"},
    )
    tables = result.output.split("What this protocol cannot prove")[0]
    assert "\u2026" not in tables
    assert "failures" in tables
